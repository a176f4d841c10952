"""Hostile turns: whatever a client sends to POST /v1/chat/completions is a 4xx in the
API's error shape or an answer, never a 500; whatever a lane answers is that lane's
`bad_response` (or `server_error` when it says it failed), and the next lane answers."""
import json

import pytest

from gateway_app.serializers import ChatCompletionRequestSerializer
from gateway_app.services import gateway_chat
from tests.conftest import error_of
from tests.gateway_app.conftest import load_lanes, streaming_lane
from tests.openai_fake import Reply

# Every JSON type: null, bool, int, float, string, list, object (and a few nestings).
ODD_VALUES = [None, True, 1, 1.5, "x", [], [1], [[1]], {}, {"a": 1}, {"role": ["user"]}]
USER = {"role": "user", "content": "Hallo"}
TOOL = {"type": "function", "function": {"name": "lookup"}}
# A request with every field of OpenAI's chat request (each message role with each of
# its fields, a text part, a tool call, a tool with every field, a named tool choice):
# each field of it, at any depth, gets every value of ODD_VALUES in turn.
FULL_REQUEST = {
    "model": "auto",
    "messages": [
        {"role": "system", "content": "Sie sind die Assistenz.", "name": "s"},
        {"role": "developer", "content": "Kurz antworten.", "name": "d"},
        {"role": "user", "content": [{"type": "text", "text": "Hallo"}], "name": "u"},
        {"role": "assistant", "content": None, "name": "a", "refusal": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
        {"role": "tool", "content": "{}", "tool_call_id": "call_1", "name": "lookup"},
        {"role": "user", "content": "Und jetzt?"},
    ],
    "tools": [{"type": "function", "function": {"name": "lookup", "description": "Sucht.", "strict": False,
                                                "parameters": {"type": "object", "properties": {}}}}],
    "tool_choice": {"type": "function", "function": {"name": "lookup"}},
    "stream": False, "stream_options": {"include_usage": True}, "temperature": 0.5, "max_tokens": 20,
    "max_completion_tokens": 20, "n": 1, "max_eur": 0.01, "language": "de", "user": "u1",
    "top_p": 0.9, "stop": ["\n\n"], "seed": 7, "response_format": {"type": "text"}, "frequency_penalty": 0.1,
    "presence_penalty": 0.1, "logit_bias": {"50256": -100}, "logprobs": False, "top_logprobs": 0,
    "parallel_tool_calls": True, "store": False, "metadata": {"k": "v"}, "service_tier": "auto",
    "reasoning_effort": "low", "verbosity": "medium", "modalities": ["text"],
    "prediction": {"type": "content", "content": "x"}, "prompt_cache_key": "k", "safety_identifier": "s",
}


def _paths(node, path=()):
    """The path of every field and list item of `node`, outermost first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield (*path, key)
        yield from _paths(value, (*path, key))


def _replaced(node, path, value):
    copy = json.loads(json.dumps(node))
    *parents, last = path
    target = copy
    for key in parents:
        target = target[key]
    target[last] = value
    return copy


def test_the_full_request_names_every_field_of_the_request():
    assert set(FULL_REQUEST) == set(ChatCompletionRequestSerializer().fields)


def hostile_bodies():
    yield FULL_REQUEST
    for path in _paths(FULL_REQUEST):
        for value in ODD_VALUES:
            yield _replaced(FULL_REQUEST, path, value)
    for key in FULL_REQUEST:  # each field left out, too
        yield {name: value for name, value in FULL_REQUEST.items() if name != key}
    for role in ("system", "developer", "user", "assistant", "tool"):
        for key in ("role", "content", "name", "tool_calls", "tool_call_id", "refusal"):
            for value in ODD_VALUES:
                yield {"model": "auto", "messages": [{"role": role, "content": "x", key: value}]}
    for value in ODD_VALUES:
        yield {"model": "auto", "messages": [USER], "tools": [TOOL], "tool_choice": {
            "type": "function", "function": {"name": value}}}


def test_the_full_request_is_answered_and_a_tool_name_of_any_type_is_a_400_naming_it(gateway):
    assert gateway.post("/v1/chat/completions", FULL_REQUEST, format="json").status_code == 200
    for name in ({"a": 1}, ["lookup"], 1, None):
        body = _replaced(FULL_REQUEST, ("tools", 0, "function", "name"), name)
        response = gateway.post("/v1/chat/completions", body, format="json")
        assert response.status_code == 400, (name, response.content[:300])
        error = error_of(response)
        assert error["code"] == "validation_error" and "tools[0].function.name" in error["details"], error


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
    (b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "lookup", "arguments": "'
     + b"[" * 5000 + b'"}}]}}]}', "bad_response", "the arguments of the tool call lookup are not a JSON object"),
    (b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "lookup", "arguments": '
     b'"{\\"a\\": NaN}"}}]}}]}', "bad_response", "the arguments of the tool call lookup are not a JSON object"),
    (b"data: " + b"[" * 5000, "bad_response", "an event of the stream is not JSON"),
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
