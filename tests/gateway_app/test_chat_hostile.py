"""Hostile turns: whatever a client sends to POST /v1/chat/completions is a 4xx in the
API's error shape or an answer, never a 500; whatever a lane answers is that lane's
`bad_response` (or `server_error` when it says it failed), and the next lane answers."""
import json

import pytest

from gateway_app.services import gateway_chat
from tests.conftest import error_of
from tests.gateway_app.conftest import load_lanes, streaming_lane
from tests.openai_fake import Reply

ODD_VALUES = [None, 1, 1.5, True, "x", [], [1], [[1]], {}, {"a": 1}, {"role": ["user"]}]
USER = {"role": "user", "content": "Hallo"}
TOOL = {"type": "function", "function": {"name": "lookup"}}


def hostile_bodies():
    for key in ("model", "messages", "tools", "tool_choice", "temperature", "max_tokens", "max_completion_tokens",
                "stream", "stream_options", "n", "max_eur", "language", "user", "top_p", "stop", "seed",
                "response_format", "frequency_penalty", "presence_penalty", "logprobs", "metadata"):
        for value in ODD_VALUES:
            yield {"model": "auto", "messages": [USER], key: value}
    for role in ("system", "developer", "user", "assistant", "tool"):
        for key in ("role", "content", "name", "tool_calls", "tool_call_id", "refusal"):
            for value in ODD_VALUES:
                yield {"model": "auto", "messages": [{"role": role, "content": "x", key: value}]}
    for value in ODD_VALUES:
        yield {"model": "auto", "messages": [{"role": "user", "content": [value]}]}
        yield {"model": "auto", "messages": [{"role": "assistant", "content": None, "tool_calls": [value]}]}
        yield {"model": "auto", "messages": [{"role": "assistant", "content": None, "tool_calls": [
            {"id": value, "type": "function", "function": {"name": value, "arguments": value}}]}]}
        yield {"model": "auto", "messages": [USER], "tools": [{"type": "function", "function": {
            "name": "f", "parameters": value, "description": value}}]}
        yield {"model": "auto", "messages": [USER], "tools": [TOOL], "tool_choice": {
            "type": "function", "function": {"name": value}}}


def test_no_body_a_client_sends_is_a_server_error(gateway):
    statuses = set()
    for body in hostile_bodies():
        response = gateway.post("/v1/chat/completions", body, format="json")
        if response.status_code != 200:
            assert 400 <= response.status_code < 500, (json.dumps(body), response.content[:300])
            error_of(response)
        statuses.add(response.status_code)
    # 404: a `model` of a string no lane or alias is (model_not_found).
    assert statuses == {200, 400, 404}


OPENAI_GARBAGE = [
    (b'data: []', "bad_response", "a chunk of the stream is not an object"),
    (b'data: {"choices": [1]}', "bad_response", "a choice of the stream is not an object"),
    (b'data: {"choices": [{"delta": []}]}', "bad_response", "the answer has no text and no tool call"),
    (b'data: {"choices": [{"delta": {"tool_calls": [{"index": {"a": 1}}]}}]}', "bad_response",
     "a tool call's index is not an integer"),
    (b'data: {"choices": [{"delta": {"tool_calls": {"a": 1}}}]}', "bad_response",
     "the delta's tool calls are not a list"),
    (b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": 5}}]}}]}', "bad_response",
     "a tool call without a name"),
    (b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "lookup", "arguments": 7}}]}}]}',
     "bad_response", "a tool call's arguments are neither JSON text nor an object"),
    (b'data: {"error": {"code": 7}}', "server_error", "the lane reported an error: {'code': 7}"),
    (b'event: error', "server_error", "the lane reported an error: "),
    (b'data: \xff\xfe', "bad_response", "the stream is not UTF-8"),
]
OLLAMA_GARBAGE = [
    (b'[]', "bad_response", "a line of the stream is not an object"),
    (b'{"message": {"tool_calls": 5}}', "bad_response", "the message's tool calls are not a list"),
    (b'{"message": {"tool_calls": [5]}}', "bad_response", "a tool call's delta is not an object"),
    (b'{"message": {"content": 5}}', "bad_response", "the message's content is not a string"),
    (b'{"done": true, "done_reason": [1], "prompt_eval_count": "x"}', "bad_response",
     "the answer has no text and no tool call"),
    (b'not json', "bad_response", "a line of the stream is not JSON"),
]
WHOLE_GARBAGE = [
    (b'[]', "bad_response", "not a chat-completions answer"),
    (b'{"choices": [{"message": {"tool_calls": 5}}]}', "bad_response",
     "the answer's tool calls are not a list of at most 32"),
    (b'{"choices": [{"message": {"content": 5}}]}', "bad_response", "the answer's content is not a string"),
]


@pytest.mark.parametrize("dialect, reply, outcome, detail", [
    *(("openai", Reply(raw_lines=[line, b"", b"data: [DONE]", b""]), *why) for line, *why in OPENAI_GARBAGE),
    *(("ollama", Reply(raw_lines=[line]), *why) for line, *why in OLLAMA_GARBAGE),
    *(("openai", Reply(body=body), *why) for body, *why in WHOLE_GARBAGE),
])
def test_whatever_a_lane_answers_is_its_failure_and_the_next_lane_answers(db, settings, chat_server, dialect, reply,
                                                                         outcome, detail):
    settings.GATEWAY_MODE = "live"
    hostile, good = chat_server(reply, dialect), chat_server(Reply(text="Alles gut."))
    load_lanes(streaming_lane("chat-hostile", endpoint=hostile.url, priority=1),
               streaming_lane("chat-good", endpoint=good.url, priority=2))
    done = list(gateway_chat(messages=[USER], tools=[TOOL]))[-1]
    assert done.text == "Alles gut."
    assert [(a.lane, a.outcome, a.detail) for a in done.attempts] == [("chat-hostile", outcome, detail),
                                                                       ("chat-good", "ok", "")]
