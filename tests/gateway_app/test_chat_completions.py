"""POST /v1/chat/completions with the `openai` package as the client, against the
served view (Django's live server on loopback), the lanes fake OpenAI-compatible
servers on loopback (tests/openai_fake.py): plain, streamed, with tool calls, the
registry's failover, and errors an OpenAI client raises cleanly."""
import json
import threading

import openai
import pytest
import yaml

from tests.gateway_app.conftest import GATEWAY_TOKEN, load_lanes, streaming_lane
from tests.openai_fake import FakeToolCall, Reply

QUESTION = [{"role": "system", "content": "Du bist die Telefonassistenz der Praxis Dr. Weber."},
            {"role": "user", "content": "Wann haben Sie geöffnet?"}]
CALLBACK_TOOL = {"type": "function", "function": {
    "name": "create_callback", "description": "Legt einen Rückrufwunsch an.",
    "parameters": {"type": "object", "properties": {"phone": {"type": "string"}, "when": {"type": "string"}},
                   "required": ["phone"]}}}
ARGUMENTS = json.dumps({"phone": "+491712345678", "when": "tomorrow-am"})


@pytest.fixture
def client(live_server):
    return openai.OpenAI(base_url=f"{live_server.url}/v1", api_key=GATEWAY_TOKEN, max_retries=0, timeout=20)


@pytest.fixture
def live(settings):
    settings.GATEWAY_MODE = "live"
    settings.GATEWAY_FIRST_TOKEN_SEC = 2
    settings.GATEWAY_STREAM_IDLE_SEC = 2
    settings.GATEWAY_DEADLINE_SEC = 10


def test_a_plain_completion_from_the_mock_lane(client):
    raw = client.chat.completions.with_raw_response.create(model="auto", messages=QUESTION)
    completion = raw.parse()
    assert completion.object == "chat.completion"
    assert completion.id.startswith("chatcmpl-")
    assert completion.model == "chat-gateway-mock"
    choice, = completion.choices
    assert (choice.index, choice.finish_reason, choice.message.role) == (0, "stop", "assistant")
    assert choice.message.content == ("Die Praxis ist Montag bis Freitag von 8 bis 18 Uhr geöffnet, samstags von 9 "
                                      "bis 13 Uhr.")
    assert choice.message.tool_calls is None
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens > 0
    assert raw.headers["X-Gateway-Lane"] == "chat-gateway-mock"
    attempt, = json.loads(raw.headers["X-Gateway-Attempts"])
    # The mock answers at once, but a loaded machine may round its time up to a millisecond or two.
    assert attempt.pop("ms") < 100
    assert attempt == {"lane": "chat-gateway-mock", "outcome": "ok", "mode": "mock"}
    assert raw.headers["X-Gateway-Cost-Eur"] == "0.000000"


def test_a_streamed_completion_arrives_in_the_lanes_pieces(client, live, chat_server):
    lane = chat_server(Reply(pieces=["Montag", " bis Freitag", " von 8 bis 18 Uhr."], usage=(40, 12)))
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    chunks = list(client.chat.completions.create(model="auto", messages=QUESTION, stream=True,
                                                 stream_options={"include_usage": True}))
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    assert {chunk.model for chunk in chunks} == {"chat-local"}
    assert len({chunk.id for chunk in chunks}) == 1
    deltas = [chunk.choices[0].delta.content for chunk in chunks if chunk.choices]
    assert deltas == ["", "Montag", " bis Freitag", " von 8 bis 18 Uhr.", None]
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert (chunks[-1].choices, chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == ([], 40, 12)
    # The history reached the lane as sent, asked to stream.
    assert lane.bodies[0]["messages"] == QUESTION and lane.bodies[0]["stream"] is True


def test_the_stream_ends_with_done_on_the_wire(live_server, live, chat_server):
    import urllib.request

    lane = chat_server(Reply(text="Gern."))
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    request = urllib.request.Request(f"{live_server.url}/v1/chat/completions", method="POST",
                                     data=json.dumps({"model": "auto", "messages": QUESTION, "stream": True}).encode(),
                                     headers={"Authorization": f"Bearer {GATEWAY_TOKEN}"})
    with urllib.request.urlopen(request, timeout=20) as response:
        assert response.headers.get_content_type() == "text/event-stream"
        assert response.headers["Cache-Control"] == "no-cache"
        body = response.read().decode()
    events = [block for block in body.split("\n\n") if block]
    assert all(event.startswith("data: ") for event in events)
    assert events[-1] == "data: [DONE]"


def test_a_tool_call_whose_arguments_arrive_in_several_deltas(client, live, chat_server):
    lane = chat_server(Reply(tool_calls=[FakeToolCall("call_42", "create_callback", ARGUMENTS, pieces=6)]))
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    # Whole: one message with the call, its arguments joined.
    completion = client.chat.completions.create(model="auto", messages=QUESTION, tools=[CALLBACK_TOOL])
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    assert message.content is None
    call, = message.tool_calls
    assert (call.id, call.type, call.function.name, json.loads(call.function.arguments)) == (
        "call_42", "function", "create_callback", json.loads(ARGUMENTS))
    assert lane.bodies[0]["tools"] == [CALLBACK_TOOL]
    # Streamed: the OpenAI client joins the deltas it gets into the same call.
    chunks = list(client.chat.completions.create(model="auto", messages=QUESTION, tools=[CALLBACK_TOOL],
                                                 tool_choice="required", stream=True))
    streamed = [delta for chunk in chunks for delta in (chunk.choices[0].delta.tool_calls or [])]
    assert [(delta.index, delta.id, delta.function.name) for delta in streamed] == [(0, "call_42", "create_callback")]
    assert json.loads("".join(delta.function.arguments for delta in streamed)) == json.loads(ARGUMENTS)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert lane.bodies[1]["tool_choice"] == "required"


def test_the_tool_result_goes_back_with_the_history_as_the_client_sends_it(client, live, chat_server):
    lane = chat_server([Reply(tool_calls=[FakeToolCall("call_42", "create_callback", ARGUMENTS)]),
                        Reply(text="Ihr Rückruf ist notiert.")])
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    messages = list(QUESTION)
    first = client.chat.completions.create(model="auto", messages=messages, tools=[CALLBACK_TOOL])
    messages.append(first.choices[0].message)  # the SDK's own message object, as its documentation shows
    messages.append({"role": "tool", "tool_call_id": "call_42", "content": '{"lead": "ld_1"}'})
    second = client.chat.completions.create(model="auto", messages=messages, tools=[CALLBACK_TOOL])
    assert second.choices[0].message.content == "Ihr Rückruf ist notiert."
    assert lane.bodies[1]["messages"] == QUESTION + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_42", "type": "function", "function": {"name": "create_callback", "arguments": ARGUMENTS}}]},
        {"role": "tool", "tool_call_id": "call_42", "content": '{"lead": "ld_1"}'}]


def test_the_registrys_failover_500_slow_first_token_and_malformed_events(client, live, chat_server, settings):
    settings.GATEWAY_FIRST_TOKEN_SEC = 0.3
    failing = chat_server(Reply(status=500))
    stalled = chat_server(Reply(text="Zu spät.", hold=threading.Event()))
    malformed = chat_server(Reply(raw_lines=[b"data: {this is not json", b""]))
    good = chat_server(Reply(pieces=["Ersatz", "antwort."]))
    load_lanes(streaming_lane("chat-a", endpoint=failing.url, priority=10),
               streaming_lane("chat-b", endpoint=stalled.url, priority=20),
               streaming_lane("chat-c", endpoint=malformed.url, priority=30),
               streaming_lane("chat-d", endpoint=good.url, priority=40))
    raw = client.chat.completions.with_raw_response.create(model="auto", messages=QUESTION, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in raw.parse() if chunk.choices)
    assert text == "Ersatzantwort."
    attempts = json.loads(raw.headers["X-Gateway-Attempts"])
    assert [(attempt["lane"], attempt["outcome"]) for attempt in attempts] == [
        ("chat-a", "server_error"), ("chat-b", "timeout"), ("chat-c", "bad_response"), ("chat-d", "ok")]
    assert raw.headers["X-Gateway-Lane"] == "chat-d"
    # The next request skips the lanes that cool down (the malformed one is not cooled down).
    completion = client.chat.completions.create(model="auto", messages=QUESTION)
    assert completion.model == "chat-d"
    assert (len(failing.requests), len(stalled.requests), len(malformed.requests)) == (1, 1, 2)


def test_model_names_the_lane_tried_first(client, live, chat_server):
    first, second = chat_server(Reply(text="Erste.")), chat_server(Reply(text="Zweite."))
    load_lanes(streaming_lane("chat-a", endpoint=first.url, priority=10),
               streaming_lane("chat-b", endpoint=second.url, priority=20))
    assert client.chat.completions.create(model="chat-b", messages=QUESTION).model == "chat-b"
    assert client.chat.completions.create(model="auto", messages=QUESTION).model == "chat-a"


def test_a_lane_that_breaks_off_mid_stream_ends_it_with_an_error_the_client_raises(client, live, chat_server):
    lane = chat_server(Reply(pieces=["Die Praxis", " ist"], break_after=2))
    load_lanes(streaming_lane("chat-a", endpoint=lane.url))
    received = []
    with pytest.raises(openai.APIError) as broken:
        for chunk in client.chat.completions.create(model="auto", messages=QUESTION, stream=True):
            received.append(chunk.choices[0].delta.content)
    assert received == ["", "Die Praxis"]
    assert broken.value.body["code"] == "answer_interrupted"
    assert broken.value.message.startswith("The lane chat-a stopped answering mid-answer (connection_error")


def test_errors_are_the_gateways_json_and_the_client_raises_them_cleanly(client, live, chat_server, live_server,
                                                                        lane_settings, refused_url):
    with pytest.raises(openai.AuthenticationError) as refused:
        openai.OpenAI(base_url=f"{live_server.url}/v1", api_key="wrong", max_retries=0).chat.completions.create(
            model="auto", messages=QUESTION)
    assert refused.value.status_code == 401 and refused.value.code == "unauthenticated"
    assert refused.value.response.headers["WWW-Authenticate"] == 'Bearer realm="gateway"'

    paid = chat_server(Reply(text="Bezahlt."))
    load_lanes(streaming_lane("chat-down", endpoint=refused_url, priority=10),
               streaming_lane("chat-paid", endpoint=paid.url, eur=1.8, priority=20))
    lane_settings("chat-paid", key="sk-paid")
    with pytest.raises(openai.NotFoundError) as unknown:
        client.chat.completions.create(model="gpt-9-ultra", messages=QUESTION)
    assert (unknown.value.status_code, unknown.value.code) == (404, "model_not_found")
    assert unknown.value.body["details"] == {"param": "model", "model": "gpt-9-ultra",
                                             "models": ["auto", "chat-down", "chat-paid"]}
    assert unknown.value.body["message"].startswith("The model 'gpt-9-ultra' does not exist here. Send one of: auto, "
                                                    "chat-down, chat-paid (GET /v1/models)")
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="auto", messages=[{"role": "tool", "content": "42"}])
    assert bad.value.body["details"] == {"messages[0].tool_call_id": ["A tool message names the call it answers."]}
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="auto", messages=QUESTION, n=2)
    assert bad.value.body["details"] == {"n": ["One choice only: n must be 1."]}
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="auto", messages=QUESTION, functions=[{"name": "f"}])
    assert list(bad.value.body["details"]) == ["functions"]

    with pytest.raises(openai.InternalServerError) as unanswered:  # 503: the free lane is down, no budget
        client.chat.completions.create(model="auto", messages=QUESTION, stream=True)
    assert unanswered.value.status_code == 503
    assert unanswered.value.code == "no_lane_answered"
    assert [(a["lane"], a["outcome"]) for a in unanswered.value.body["details"]["attempts"]] == [
        ("chat-down", "connection_error"), ("chat-paid", "over_budget")]

    load_lanes(streaming_lane("chat-paid", endpoint=paid.url, eur=1.8))
    with pytest.raises(openai.UnprocessableEntityError) as over:
        client.chat.completions.create(model="auto", messages=QUESTION, extra_body={"max_eur": 0})
    assert (over.value.status_code, over.value.code) == (422, "over_budget")
    assert paid.requests == []
    completion = client.chat.completions.create(model="auto", messages=QUESTION, extra_body={"max_eur": 0.01})
    assert completion.model == "chat-paid"


@pytest.mark.slow
def test_gunicorn_hands_each_event_on_as_the_lane_streams_it(tmp_path, chat_server):
    """Through gunicorn's sync worker (as served): the client has the first words while
    the lane is still thinking about the rest, and the rest follows once it goes on."""
    from tests.gateway_app.conftest import SHIPPED
    from tests.live_service import LiveService

    go_on = threading.Event()
    lane = chat_server(Reply(pieces=["Einen Moment", ", ich sehe nach."], stall_after=2, stall=go_on))
    document = {**SHIPPED, "models": [streaming_lane("chat-local", endpoint=lane.url)]}
    (tmp_path / "registry.json").write_text(json.dumps(document), encoding="utf-8")
    service = LiveService(tmp_path)
    service.env.update({"GATEWAY_STATIC_TOKEN": GATEWAY_TOKEN, "GATEWAY_MODE": "live"})
    try:
        service.migrate()
        service.manage("load_registry", str(tmp_path / "registry.json"))
        base, _ = service.start()
        client = openai.OpenAI(base_url=f"{base}/v1", api_key=GATEWAY_TOKEN, max_retries=0, timeout=20)
        with client.chat.completions.create(model="auto", messages=QUESTION, stream=True) as stream:
            chunks = iter(stream)
            assert next(chunks).choices[0].delta.content == ""
            assert next(chunks).choices[0].delta.content == "Einen Moment"  # the lane holds the rest back
            go_on.set()
            rest = [chunk.choices[0].delta.content for chunk in chunks]
        assert rest == [", ich sehe nach.", None]
    finally:
        go_on.set()
        service.stop()


def test_the_documents_event_stream_is_the_chunk_schema_every_event_fits(live_server, live, chat_server):
    import urllib.request

    from jsonschema import Draft202012Validator
    from rest_framework.test import APIClient

    document = yaml.safe_load(APIClient().get("/v2/schema").content)
    answer = document["paths"]["/v1/chat/completions"]["post"]["responses"]["200"]
    stream = answer["content"]["text/event-stream"]
    assert stream["schema"] == {"$ref": "#/components/schemas/ChatCompletionChunk"}  # not {"type": "string"}
    assert "data: [DONE]" in answer["description"] and "data: [DONE]" in next(iter(stream["examples"].values()))[
        "value"]
    chunk = Draft202012Validator({**stream["schema"], "components": document["components"]})

    lane = chat_server(Reply(text="Gern, wir rufen Sie zurück.",
                             tool_calls=[FakeToolCall("call_7", "create_callback", ARGUMENTS, pieces=3)]))
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    body = {"model": "auto", "messages": QUESTION, "tools": [CALLBACK_TOOL], "stream": True,
            "stream_options": {"include_usage": True}}
    request = urllib.request.Request(f"{live_server.url}/v1/chat/completions", method="POST",
                                     data=json.dumps(body).encode(), headers={"Authorization": f"Bearer {GATEWAY_TOKEN}"})
    with urllib.request.urlopen(request, timeout=20) as response:
        events = [block.removeprefix("data: ") for block in response.read().decode().split("\n\n") if block]
    assert events[-1] == "[DONE]" and len(events) >= 5
    for event in events[:-1]:
        assert list(chunk.iter_errors(json.loads(event))) == [], event
