"""Which lanes a request tries, in which order, and how each one is called.

The registry's router gives the candidates (and names the lanes in a cooldown); the
gateway tries every zero-euro lane first, in the router's order, then the paid ones
whose estimated cost fits the request's budget. A lane is called in its mode:

1. `GATEWAY_MODE_<LANE>` (mock, api or cli) when set;
2. `mock` for the gateway's own mock lane (endpoint `/v1/agent`, or `params.model`
   `mock`);
3. `cli` when `GATEWAY_CMD_<LANE>` is set, `api` when `GATEWAY_ENDPOINT_<LANE>` or
   `GATEWAY_KEY_<LANE>` is;
4. otherwise `GATEWAY_MODE` decides: `mock` simulates the lane with the rule set
   (nothing leaves the machine), `live` calls it in `api` mode at its registry
   endpoint when that is an HTTP URL (else it is unavailable).

Without a registry there is nothing to route: the gateway's own mock lane answers.

A paid lane is used only when its worst case fits the budget: every UTF-8 byte of
the prompt (and system text) a token, plus the template's tokens, plus every token
the answer may have, which is what the lane is told (`max_tokens`, Ollama's
`num_predict`: GATEWAY_MAX_TOKENS; a command cannot be told, so its output cap,
GATEWAY_CLI_MAX_OUTPUT_BYTES, counts as tokens). Whatever the script of the prompt,
the bill cannot pass the budget.
"""
import time
from dataclasses import dataclass, replace
from functools import partial

from django.conf import settings

from gateway_app.providers.chat_api import ChatResult, chat_completion, chat_turn, prompt_token_bound, token_bound
from gateway_app.providers.cli import run_command
from gateway_app.providers.mock import mock_answer, mock_policy, mock_turn
from gateway_app.turns import LaneEnd, TextDelta, request_token_bound
from registry_app import snapshot
from registry_app.lanes.config import LANE_MODES, gateway_mode, lane_setting, lane_variable
from registry_app.lanes.cost import Measures, lane_cost
from registry_app.lanes.failover import Step
from registry_app.lanes.plans import api_target, budget_skip, http_url, lane_model, ordered_lanes
from registry_app.routing import route
from registry_app.snapshot import SnapshotLane

GATEWAY_PATH = "/v1/agent"

# The gateway's own lane, as the shipped registry lists it: it answers without a registry.
BUILTIN_MOCK_LANE = SnapshotLane.from_entry({
    "id": "chat-gateway-mock", "name": "Gateway Mock", "capability": "chat", "provider": "intern",
    "hosting": "self-hosted", "access": "ai-gateway", "endpoint": GATEWAY_PATH, "health": "/v1/ready",
    "cost": {"model": "self-hosted", "unit": "compute", "eur": 0}, "status": "live", "priority": 90,
    "quality_tier": "mid", "latency_class": "fast",
    "params": {"streaming": False, "languages": ["de", "en"], "model": "mock"},
    "test": "POST /v1/agent {\"prompt\": \"ping\"}", "source": "gateway_app/providers/mock.py",
    "notes": "Built in: answers when no registry is loaded.",
})


@dataclass(frozen=True)
class ChatQuery:
    prompt: str
    system: str = ""
    language: object = None  # a language code, or None for any
    capability: str = "chat"


def is_gateway_mock(lane):
    return lane.entry.get("endpoint") == GATEWAY_PATH or (lane.entry.get("params") or {}).get("model") == "mock"


def chat_lane_mode(lane):
    """mock, api, cli, or None when the gateway has no way to call the lane."""
    explicit = lane_setting(lane.id, "MODE")
    if explicit in LANE_MODES:
        return explicit
    if is_gateway_mock(lane):
        return "mock"
    if lane_setting(lane.id, "CMD"):
        return "cli"
    if lane_setting(lane.id, "ENDPOINT") or lane_setting(lane.id, "KEY"):
        return "api"
    if gateway_mode() == "mock":
        return "mock"
    return "api" if http_url(lane.entry.get("endpoint")) else None


def answer_token_cap(mode):
    """The most tokens a lane's answer may have in `mode`: what an api lane is told, or
    the bytes a command may print. A simulated lane counts as the api lane it stands for."""
    return settings.GATEWAY_CLI_MAX_OUTPUT_BYTES if mode == "cli" else settings.GATEWAY_MAX_TOKENS


def _mock_call(query, timeout):
    text = mock_answer(query.prompt, language=query.language)
    return ChatResult(text=text, input_tokens=prompt_token_bound(query.prompt, query.system),
                      output_tokens=min(token_bound(text), settings.GATEWAY_MAX_TOKENS))


def _cli_call(command, query, timeout):
    stdin_text = f"{query.system}\n\n{query.prompt}" if query.system else query.prompt
    text = run_command(command, stdin_text=stdin_text, timeout=timeout,
                       max_bytes=settings.GATEWAY_CLI_MAX_OUTPUT_BYTES)
    return ChatResult(text=text, input_tokens=prompt_token_bound(query.prompt, query.system),
                      output_tokens=token_bound(text))


def chat_step(lane, cooldown, query, max_eur):
    mode = chat_lane_mode(lane)
    if cooldown:
        return Step(lane, mode or "", skip=("cooldown", cooldown))
    if mode is None:
        return Step(lane, "", skip=("unavailable", "the gateway cannot reach it: its endpoint is no HTTP URL; set "
                                    f"{lane_variable(lane.id, 'ENDPOINT')} or {lane_variable(lane.id, 'CMD')}"))
    prompt_tokens, answer_tokens = prompt_token_bound(query.prompt, query.system), answer_token_cap(mode)
    estimate = lane_cost(lane, Measures(tokens=prompt_tokens + answer_tokens))
    skip = budget_skip(lane, estimate, max_eur, f" ({prompt_tokens} prompt tokens, counted as its UTF-8 bytes, + "
                                                f"{answer_tokens} answer tokens)")
    if skip:
        return Step(lane, mode, skip=skip, estimate_eur=estimate)
    if mode == "mock":
        return Step(lane, mode, call=partial(_mock_call, query), estimate_eur=estimate)
    if mode == "cli":
        command = lane_setting(lane.id, "CMD")
        if not command:
            return Step(lane, mode, skip=("unavailable", f"no command: set {lane_variable(lane.id, 'CMD')}"))
        return Step(lane, mode, call=partial(_cli_call, command, query), estimate_eur=estimate)
    endpoint, key, unreachable = api_target(lane)
    if unreachable:
        return Step(lane, mode, skip=unreachable)

    def call(timeout):
        return chat_completion(endpoint=endpoint, key=key, model=lane_model(lane), prompt=query.prompt,
                               system=query.system, max_tokens=answer_tokens, timeout=timeout)
    return Step(lane, mode, call=call, estimate_eur=estimate)


def chat_steps(query, *, max_eur, min_quality=None, max_latency=None, hosted_fallback=False):
    """The Steps of a chat or code request; with `hosted_fallback` (the cloud agent),
    the hosted chat providers of any tier and latency follow the request's own lanes."""
    routed = route(query.capability, language=query.language, min_quality=min_quality, max_latency=max_latency)
    if routed.version is None:
        return [chat_step(BUILTIN_MOCK_LANE, None, query, max_eur)] if query.capability == "chat" else []
    steps = [chat_step(lane, cooldown, query, max_eur) for lane, cooldown in ordered_lanes(routed)]
    if hosted_fallback:
        planned = {step.lane.id for step in steps}
        everything = route(query.capability, language=query.language)
        steps += [replace(chat_step(lane, cooldown, query, max_eur), fallback=True)
                  for lane, cooldown in ordered_lanes(everything)
                  if lane.hosting == "api" and lane.id not in planned]
    return steps


# --- A conversation's turn (gateway_app.services.gateway_chat) ---
# A turn's Step calls `call(first_by, ends_by, cancel)` (monotonic times: the first
# token is due, the answer must end; an http.Cancel that may stop the reading from
# another thread) and gets the lane's events: TextDelta…, ToolCall…, LaneEnd.

TURN_CAPABILITIES = ("chat", "code")


def turn_lanes(capability):
    """The lanes a turn of `capability` may name: every lane of it in the registry (the
    gateway's own mock lane when no registry is loaded)."""
    current = snapshot.current()
    if current is None:
        return (BUILTIN_MOCK_LANE,) if capability == "chat" else ()
    return current.by_capability.get(capability, ())


def _turn_stdin(request):
    """A command's stdin for a turn: the system text, a blank line, then the conversation."""
    system = "\n\n".join(message["content"] for message in request.messages if message["role"] == "system")
    lines = []
    for message in request.messages:
        if message["role"] == "system":
            continue
        who = {"user": "User", "assistant": "Assistant", "tool": "Tool result"}[message["role"]]
        lines.append(f"{who}: {message.get('content') or ''}")
    conversation = "\n".join(lines)
    return f"{system}\n\n{conversation}" if system else conversation


def _cli_turn(command, request, first_by, ends_by, cancel):
    text = run_command(command, stdin_text=_turn_stdin(request), timeout=max(first_by - time.monotonic(), 0.001),
                       max_bytes=settings.GATEWAY_CLI_MAX_OUTPUT_BYTES)
    yield TextDelta(text)
    yield LaneEnd("stop")


def _mock_turn(request, first_by, ends_by, cancel):
    return mock_turn(request)


def turn_step(lane, unusable, request, max_eur):
    """The Step of one lane for a turn. `unusable`: (outcome, reason) when the router
    leaves the lane out (a cooldown, or a named lane the route does not offer)."""
    mode = chat_lane_mode(lane)
    if unusable:
        return Step(lane, mode or "", skip=unusable)
    if mode is None:
        return Step(lane, "", skip=("unavailable", "the gateway cannot reach it: its endpoint is no HTTP URL; set "
                                    f"{lane_variable(lane.id, 'ENDPOINT')} or {lane_variable(lane.id, 'CMD')}"))
    if mode == "cli" and request.tool_required:
        return Step(lane, mode, skip=("unavailable", "a command cannot call tools, and the turn requires one"))
    if mode == "mock" and request.tool_required and not mock_policy().calls_tools:
        return Step(lane, mode, skip=("unavailable", "the mock lane's policy calls no tools, and the turn requires "
                                      "one"))
    prompt_tokens = request_token_bound(request)
    answer_tokens = settings.GATEWAY_CLI_MAX_OUTPUT_BYTES if mode == "cli" else request.max_tokens
    estimate = lane_cost(lane, Measures(tokens=prompt_tokens + answer_tokens))
    skip = budget_skip(lane, estimate, max_eur, f" ({prompt_tokens} prompt tokens, counted as its UTF-8 bytes, + "
                                                f"{answer_tokens} answer tokens)")
    if skip:
        return Step(lane, mode, skip=skip, estimate_eur=estimate)
    if mode == "mock":
        return Step(lane, mode, call=partial(_mock_turn, request), estimate_eur=estimate)
    if mode == "cli":
        command = lane_setting(lane.id, "CMD")
        if not command:
            return Step(lane, mode, skip=("unavailable", f"no command: set {lane_variable(lane.id, 'CMD')}"))
        return Step(lane, mode, call=partial(_cli_turn, command, request), estimate_eur=estimate)
    endpoint, key, unreachable = api_target(lane)
    if unreachable:
        return Step(lane, mode, skip=unreachable)

    def call(first_by, ends_by, cancel):
        return chat_turn(endpoint=endpoint, key=key, model=lane_model(lane), request=request, stream=lane.streaming,
                         connect_timeout=settings.GATEWAY_CONNECT_TIMEOUT_SEC, first_by=first_by, ends_by=ends_by,
                         idle_sec=settings.GATEWAY_STREAM_IDLE_SEC, cancel=cancel)
    return Step(lane, mode, call=call, estimate_eur=estimate)


def turn_steps(request, *, capability, max_eur, lane=None):
    """The Steps of a turn: the named `lane` (a SnapshotLane) first when given, then the
    lanes of the registry's route in the gateway's order (zero-euro first)."""
    routed = route(capability, language=request.language)
    if routed.version is None:
        return [turn_step(BUILTIN_MOCK_LANE, None, request, max_eur)] if capability == "chat" else []
    ordered = ordered_lanes(routed)
    steps = []
    if lane is not None:
        listed = {candidate.id: cooldown for candidate, cooldown in ordered}
        if lane.id in listed:
            cooldown = listed[lane.id]
            steps.append(turn_step(lane, ("cooldown", cooldown) if cooldown else None, request, max_eur))
        else:
            why = next((exclusion.reason for exclusion in routed.excluded if exclusion.lane.id == lane.id),
                       "the registry's route does not offer it")
            steps.append(Step(lane, chat_lane_mode(lane) or "", skip=("unavailable", why)))
    steps += [turn_step(candidate, ("cooldown", cooldown) if cooldown else None, request, max_eur)
              for candidate, cooldown in ordered if lane is None or candidate.id != lane.id]
    return steps
