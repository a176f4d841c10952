"""Where the conversation stands, as the replay of its history finds it, and a reply."""
from dataclasses import dataclass, field

from agent_app.policy.heard import When

# What the policy asked last: a question of a callback's, or one of its own.
FLOW_QUESTIONS = ("confirm_caller", "phone", "confirm_phone", "time")


@dataclass
class Flow:
    """A callback being taken down."""

    kind: str  # callback, appointment, transfer
    note: str
    phone: str | None = None
    confirmed: bool = False
    caller_declined: bool = False
    misses: int = 0
    when: When = field(default_factory=When)
    time_asked: bool = False
    sent: bool = False
    bye: bool = False  # the caller said goodbye: after the callback, the goodbye and end_call


@dataclass
class State:
    pending: str | None = None
    flow: Flow | None = None
    offer_note: str = ""  # the note of the callback offered
    question: str = ""  # what was looked up last
    calls: dict = field(default_factory=dict)  # tool call id → (name, arguments)
    seen: int = 0  # tool calls in the history


@dataclass
class Reply:
    text: str = ""
    calls: list = field(default_factory=list)  # (name, arguments)
    pending: str | None = None

