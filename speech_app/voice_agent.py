"""Speech to speech: what a voice-agent lane (OpenAI Realtime, protocol `openai-realtime`)
is to the conversation core. Beside the pipeline (hear → think → speak) an assistant in
`realtime` mode hands the call's audio to one provider session that hears, thinks and
speaks itself, with its own turn detection; the conversation core keeps what is ours:
the disclosure spoken first, the tools, the transcript, barge-in on the wire, booking.

A `VoiceAgent` opens a `VoiceAgentSession` per call (connected and configured: the
instructions, the tools, the audio format); the session takes the caller's audio in its
CallAudio encoding and gives `AgentEvent`s: the agent's audio and its transcript, the
caller's speech starting (barge-in) and its transcript, tool calls, the end of a
response. A failure is a `LaneFailure` (registry_app.lanes.failover), as for every lane.
"""
from dataclasses import dataclass
from typing import Any, Protocol

from speech_app.streaming import CallAudio


@dataclass(frozen=True)
class AgentAudio:
    """Audio of the agent's current response, in the session's CallAudio encoding."""

    data: bytes


@dataclass(frozen=True)
class AgentText:
    """The transcript of what the agent says: a piece (`final` False) or the whole of
    the response's text (`final` True)."""

    text: str
    final: bool


@dataclass(frozen=True)
class CallerStarted:
    """The provider heard the caller start speaking (barge-in while the agent speaks)."""


@dataclass(frozen=True)
class CallerText:
    """The transcript of one utterance of the caller."""

    text: str


@dataclass(frozen=True)
class AgentToolCall:
    """The model calls one of our tools; `arguments` is its JSON text."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ResponseDone:
    """A response of the agent ended: `completed`, `cancelled` (barge-in), `incomplete`
    or `failed`."""

    status: str


AgentEvent = AgentAudio | AgentText | CallerStarted | CallerText | AgentToolCall | ResponseDone


class VoiceAgentSession(Protocol):
    """One call's session with a speech-to-speech provider."""

    @property
    def responding(self) -> bool:
        """Whether a response of the agent is under way (created, not done)."""

    async def send_audio(self, data: bytes) -> None:
        """The caller's audio in the session's encoding; LaneFailure when the provider failed."""

    async def cancel(self) -> None:
        """Barge-in: the response under way stops at the provider (nothing when none is)."""

    async def tool_result(self, call_id: str, output: str) -> None:
        """The result of a tool call (JSON text: data, not instructions)."""

    async def respond(self) -> None:
        """Asks for a response (after tool results)."""

    async def next_event(self) -> AgentEvent:
        """The next event; LaneFailure when the connection failed or the provider refused."""

    async def close(self) -> None:
        """The call ended; never raises."""


class VoiceAgent(Protocol):
    protocol: str
    lane_id: str

    async def open(self, *, audio: CallAudio, instructions: str, tools: list[dict[str, Any]],
                   language: str) -> VoiceAgentSession:
        """A configured session; LaneFailure when the provider cannot be reached or refuses."""
