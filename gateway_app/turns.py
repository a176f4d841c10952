"""A conversation's turn on a chat lane: what is asked (ChatRequest) and what comes back
(the events of `gateway_app.services.gateway_chat`).

The request is the OpenAI Chat Completions wire format's: `messages` (roles system,
user, assistant, tool), `tools` (functions with JSON Schema parameters), `tool_choice`,
`temperature`, `max_tokens`. It is checked here once, for the in-process callers (the
voice agent's conversation core) and for `POST /v1/chat/completions` alike, and
passed to the lanes as it came (text parts of a message's content joined into one
string, `developer` spoken as `system`).

The events, in this order:

- `TextDelta(text)`: the next piece of the assistant's text, as the lane streams it;
- `ToolCall(id, name, arguments)`: a tool call, complete (its argument deltas joined
  by index, the JSON parsed into a dict), after the text;
- `ChatDone(...)`: the last event, once: why the answer ended, the whole text, the
  tool calls, the tokens, the lane that answered, its cost and every attempt.
"""
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.conf import settings

from console.errors import ValidationFailed

ROLES = ("system", "user", "assistant", "tool")
# Spoken as `system` to every lane: OpenAI's newer name for the system prompt.
ROLE_ALIASES = {"developer": "system"}
TOOL_CHOICES = ("none", "auto", "required")
FINISH_REASONS = ("stop", "length", "tool_calls", "content_filter")
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_MESSAGES = 1000
MAX_TOOLS = 64
MAX_TOOL_CALLS = 32
MAX_TEXT_CHARS = 400_000
# Keys that OpenAI clients send back with an assistant message they received (the
# SDK's message objects carry them); they say nothing a lane needs and are left out.
ECHOED_KEYS = frozenset({"refusal", "annotations", "audio", "function_call", "reasoning_content"})
MESSAGE_KEYS = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "name", "tool_calls"},
    "tool": {"role", "content", "tool_call_id", "name"},
}
# Tokens a chat template adds around each message (role markers, separators, a
# SentencePiece tokenizer's leading space) and before the answer: more than any
# common template (OpenAI's 3 + 3, Llama 3's 4 + 5, Mistral's 2 or 3). Counted
# around each tool definition too, which a template renders into the prompt.
TEMPLATE_TOKENS = 8


@dataclass(frozen=True)
class ChatRequest:
    """One turn as the lanes are asked it (checked by `chat_request`)."""

    messages: tuple  # of dicts in the wire format
    tools: tuple = ()  # of {"type": "function", "function": {...}}; empty: none offered
    tool_choice: object = None  # None (the lane's default), "none", "auto", "required" or {"type": "function", …}
    temperature: object = None  # a float, or None for the lane's default
    max_tokens: int = 0  # what the lane is told: at most GATEWAY_MAX_TOKENS
    language: object = None  # a language code, or None for any
    # OpenAI's sampling and format fields, as the API's serializer checked them; None
    # (or empty): the lane's default. Passed to the lanes that speak OpenAI's or
    # Ollama's dialect (gateway_app.providers.chat_api.turn_body).
    top_p: float | None = None
    stop: tuple = ()  # up to 4 strings
    seed: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    response_format: Mapping | None = None  # {"type": "json_object"} or {"type": "json_schema", …}

    @property
    def tool_required(self):
        """The lane must call a tool: `required`, or a named function."""
        return self.tool_choice == "required" or isinstance(self.tool_choice, Mapping)

    def last_user_text(self):
        return next((message["content"] for message in reversed(self.messages) if message["role"] == "user"), "")

    def tool_names(self):
        return [tool["function"]["name"] for tool in self.tools]


@dataclass(frozen=True)
class TextDelta:
    """The next piece of the assistant's text."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """One tool call, complete. `id` is the lane's (or `call_<n>` when it gave none);
    a tool message answering it names it as `tool_call_id`."""

    id: str
    name: str
    arguments: dict

    def as_wire(self):
        """The call as an assistant message's `tool_calls` entry (arguments as JSON text)."""
        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": json.dumps(self.arguments, ensure_ascii=False)}}


@dataclass(frozen=True)
class ChatDone:
    """The end of a turn: always the last event."""

    finish_reason: str  # stop, length, tool_calls or content_filter
    text: str  # the whole text of the answer
    tool_calls: tuple  # the ToolCalls again, in order
    input_tokens: int  # the lane's count, else the bound (every byte a token)
    output_tokens: int
    lane: str  # the lane that answered
    mode: str  # mock, api or cli
    cost_eur: float
    attempts: tuple = field(default=())  # failover.Attempt, in the order tried, up to this lane

    def assistant_message(self):
        """The answer as the message to append to the history for the next turn."""
        message = {"role": "assistant", "content": self.text or None}
        if self.tool_calls:
            message["tool_calls"] = [call.as_wire() for call in self.tool_calls]
        return message


# What a lane's reader yields besides TextDelta and ToolCall: its last item.
@dataclass(frozen=True)
class LaneEnd:
    finish_reason: str
    input_tokens: int | None = None  # the lane's counts, or None when it gave none
    output_tokens: int | None = None


def token_bound(text):
    """The most tokens `text` can be: one per byte of UTF-8. Every token of the common
    tokenizers (byte-level BPE as GPT's, Llama 3's and Mistral's tekken; SentencePiece
    with byte fallback) stands for at least one byte, so this is never too low. It
    is four to six times the usual count of English or German text (about four
    characters a token) and close to the real count of CJK text and emoji, which a
    count of characters undercounts by up to seven times."""
    return len(text.encode("utf-8", "surrogatepass"))


def request_token_bound(request):
    """The most tokens the turn's prompt can be billed for: every byte of every message
    (its text, name, tool calls) and of the tools' JSON a token, plus the template's
    tokens per message, per tool and before the answer."""
    total = TEMPLATE_TOKENS
    for message in request.messages:
        total += TEMPLATE_TOKENS + token_bound(message.get("content") or "") + token_bound(message.get("name") or "")
        for call in message.get("tool_calls") or ():
            total += TEMPLATE_TOKENS + token_bound(json.dumps(call, ensure_ascii=False))
    for tool in request.tools:
        total += TEMPLATE_TOKENS + token_bound(json.dumps(tool, ensure_ascii=False))
    return total


def normal_finish(reason, tool_calls):
    """OpenAI's finish reasons; a lane's other words for them (Ollama, the legacy
    `function_call`) mapped, anything unknown as `stop`."""
    if tool_calls:
        return "tool_calls"
    return reason if reason in FINISH_REASONS else "stop"


class _Problems:
    def __init__(self):
        self.details = {}

    def add(self, path, message):
        self.details.setdefault(path, []).append(message)

    def raise_any(self):
        if self.details:
            raise ValidationFailed(details=dict(list(self.details.items())[:20]))


def _text(content, path, problems, *, allow_none=False):
    """A message's content as one string: a string, or a list of text parts."""
    if content is None and allow_none:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                problems.add(f"{path}[{index}]", "Only text parts are supported: {\"type\": \"text\", \"text\": …}.")
        return "".join(texts)
    problems.add(path, "Must be a string or a list of text parts.")
    return ""


def _tool_calls(calls, path, problems):
    if not isinstance(calls, list) or not calls or len(calls) > MAX_TOOL_CALLS:
        problems.add(path, f"Must be a list of 1 to {MAX_TOOL_CALLS} tool calls.")
        return []
    checked = []
    for index, call in enumerate(calls):
        where = f"{path}[{index}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if (not isinstance(call, Mapping) or not isinstance(call.get("id"), str) or not call["id"]
                or call.get("type", "function") != "function" or not isinstance(function, Mapping)
                or not isinstance(function.get("name"), str) or not isinstance(function.get("arguments"), str)):
            problems.add(where, 'A tool call is {"id", "type": "function", "function": {"name", "arguments": '
                                '"<JSON text>"}}.')
            continue
        checked.append({"id": call["id"], "type": "function",
                        "function": {"name": function["name"], "arguments": function["arguments"]}})
    return checked


def _message(message, path, problems):
    if not isinstance(message, Mapping):
        problems.add(path, "Must be an object with a role and content.")
        return None
    role = message.get("role")
    role = ROLE_ALIASES.get(role, role) if isinstance(role, str) else None
    if role not in ROLES:
        problems.add(f"{path}.role", f"Must be one of: {', '.join(ROLES)}.")
        return None
    for key in message:
        if key not in MESSAGE_KEYS[role] and not (key in ECHOED_KEYS and role == "assistant"):
            problems.add(f"{path}.{key}", f"Unknown field of a {role} message. Accepted: "
                                          f"{', '.join(sorted(MESSAGE_KEYS[role]))}.")
    checked = {"role": role}
    has_calls = role == "assistant" and message.get("tool_calls") not in (None, [])
    if "content" not in message and not has_calls:
        problems.add(f"{path}.content", "This field is required.")
    checked["content"] = _text(message.get("content"), f"{path}.content", problems, allow_none=has_calls)
    if "name" in message:
        if not isinstance(message["name"], str) or not message["name"] or len(message["name"]) > 64:
            problems.add(f"{path}.name", "Must be a string of 1 to 64 characters.")
        else:
            checked["name"] = message["name"]
    if has_calls:
        checked["tool_calls"] = _tool_calls(message["tool_calls"], f"{path}.tool_calls", problems)
    if role == "tool":
        if not isinstance(message.get("tool_call_id"), str) or not message["tool_call_id"]:
            problems.add(f"{path}.tool_call_id", "A tool message names the call it answers.")
        else:
            checked["tool_call_id"] = message["tool_call_id"]
    return checked


def _tools(tools, problems):
    if tools is None:
        return ()
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS:
        problems.add("tools", f"Must be a list of at most {MAX_TOOLS} tools.")
        return ()
    checked, names = [], set()
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        function = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(tool, Mapping) or tool.get("type") != "function" or not isinstance(function, Mapping):
            problems.add(where, 'A tool is {"type": "function", "function": {"name", "description"?, '
                                '"parameters"?}}.')
            continue
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            problems.add(f"{where}.function.name", "Must be a string of 1 to 64 letters, digits, '_' or '-'.")
        elif name in names:
            problems.add(f"{where}.function.name", f"Another tool is called {name} already.")
        else:
            names.add(name)
        if "description" in function and not isinstance(function["description"], str):
            problems.add(f"{where}.function.description", "Must be a string.")
        if "parameters" in function and not isinstance(function["parameters"], Mapping):
            problems.add(f"{where}.function.parameters", "Must be a JSON Schema object.")
        for key in set(tool) - {"type", "function"}:
            problems.add(f"{where}.{key}", "Unknown field of a tool. Accepted: type, function.")
        for key in set(function) - {"name", "description", "parameters", "strict"}:
            problems.add(f"{where}.function.{key}", "Unknown field of a function. Accepted: name, description, "
                                                    "parameters, strict.")
        checked.append({"type": "function", "function": dict(function)})
    return tuple(checked)


def _tool_choice(choice, tools, problems):
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            problems.add("tool_choice", f"'{choice}' is not a valid choice. Send one of: {', '.join(TOOL_CHOICES)}, "
                                        'or {"type": "function", "function": {"name": …}}.')
        elif choice == "required" and not tools:
            problems.add("tool_choice", "'required' needs tools.")
        return choice
    function = choice.get("function") if isinstance(choice, Mapping) else None
    if not isinstance(function, Mapping) or choice.get("type") != "function":
        problems.add("tool_choice", 'Must be none, auto, required or {"type": "function", "function": {"name": …}}.')
        return None
    names = [tool["function"].get("name") for tool in tools]
    if function.get("name") not in names:
        problems.add("tool_choice", f"Names no tool of the request. Tools: {', '.join(map(str, names)) or 'none'}.")
    return {"type": "function", "function": {"name": function.get("name")}}


def chat_request(*, messages, tools=None, tool_choice=None, temperature=None, max_tokens=None, language=None,
                 **sampling):
    """The checked ChatRequest, or ValidationFailed (400) naming each problem by its path
    (`messages[2].content`, `tools[0].function.name`)."""
    problems = _Problems()
    checked = []
    if not isinstance(messages, list) or not messages or len(messages) > MAX_MESSAGES:
        problems.add("messages", f"Must be a list of 1 to {MAX_MESSAGES} messages.")
    else:
        checked = [_message(message, f"messages[{index}]", problems) for index, message in enumerate(messages)]
        chars = sum(len(message.get("content") or "") for message in checked if message)
        if chars > MAX_TEXT_CHARS:
            problems.add("messages", f"The messages hold {chars} characters; at most {MAX_TEXT_CHARS}.")
    checked_tools = _tools(tools, problems)
    choice = _tool_choice(tool_choice, checked_tools, problems)
    if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, (int, float))
                                    or not 0 <= temperature <= 2):
        problems.add("temperature", "Must be a number from 0 to 2.")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        problems.add("max_tokens", "Must be a positive integer.")
    problems.raise_any()
    cap = settings.GATEWAY_MAX_TOKENS
    return ChatRequest(messages=tuple(checked), tools=checked_tools, tool_choice=choice,
                       temperature=None if temperature is None else float(temperature),
                       max_tokens=min(max_tokens or cap, cap), language=language, **sampling)
