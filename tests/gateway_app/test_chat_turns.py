"""gateway_chat: a conversation's turn through the registry's lanes as a stream of events.

The lanes are fake OpenAI-compatible servers on loopback speaking the real wire format
(tests/openai_fake.py): the history, the system prompt and the tools reach them as
sent, streamed text arrives in its pieces, a tool call's argument deltas are joined,
and failover, cooldowns and the budget apply per turn as for /v1/agent."""
import json
import threading
import time

import pytest

from console.errors import ValidationFailed
from gateway_app.errors import AnswerInterrupted, NoLaneAnswered, OverBudget
from gateway_app.models import LaneUsage
from gateway_app.providers.mock import RuleSetPolicy, register_mock_policy
from gateway_app.services import gateway_chat
from gateway_app.turns import ChatDone, TextDelta, ToolCall
from registry_app.models import LaneCooldown
from tests.gateway_app.conftest import chat_lane, load_lanes, streaming_lane
from tests.openai_fake import FakeToolCall, Reply

HISTORY = [
    {"role": "system", "content": "Du bist die Telefonassistenz der Praxis Dr. Weber. Antworte kurz."},
    {"role": "user", "content": "Guten Tag, ich hätte gern einen Rückruf."},
    {"role": "assistant", "content": "Gern. Unter welcher Nummer erreichen wir Sie?"},
    {"role": "user", "content": "Unter 0171 2345678, am liebsten morgen Vormittag."},
]
CALLBACK_TOOL = {"type": "function", "function": {
    "name": "create_callback", "description": "Legt einen Rückrufwunsch an.",
    "parameters": {"type": "object", "properties": {"phone": {"type": "string"}, "when": {"type": "string"}},
                   "required": ["phone"]}}}


@pytest.fixture
def live(settings):
    """Lanes are called at their registry endpoints (not simulated), with short bounds."""
    settings.GATEWAY_MODE = "live"
    settings.GATEWAY_FIRST_TOKEN_SEC = 2
    settings.GATEWAY_STREAM_IDLE_SEC = 2
    settings.GATEWAY_DEADLINE_SEC = 10


def events_of(stream):
    return list(stream)


def outcomes(done_or_details):
    attempts = done_or_details.attempts if isinstance(done_or_details, ChatDone) else done_or_details["attempts"]
    return [(a.lane, a.outcome) if not isinstance(a, dict) else (a["lane"], a["outcome"]) for a in attempts]


def test_history_system_prompt_and_tools_reach_the_lane_as_sent(db, live, chat_server):
    lane = chat_server(Reply(text="Gern, ich lege den Rückruf an."))
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    events_of(gateway_chat(messages=HISTORY, tools=[CALLBACK_TOOL], tool_choice="auto", temperature=0.2,
                           max_tokens=200))
    (path, headers, body), = lane.requests
    assert path == "/v1/chat/completions"
    assert body == {"model": "test-model", "messages": HISTORY, "tools": [CALLBACK_TOOL], "tool_choice": "auto",
                    "temperature": 0.2, "max_tokens": 200, "stream": True}
    assert headers["Accept"] == "text/event-stream"
    assert "Authorization" not in headers  # a self-hosted lane without a key


def test_the_text_arrives_in_the_pieces_the_lane_streams_then_the_end(db, live, chat_server):
    lane = chat_server(Reply(pieces=["Gern", ", ich", " lege den", " Rückruf an."], usage=(120, 9)))
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    stream = gateway_chat(messages=HISTORY)
    assert (stream.lane, stream.mode) == ("chat-local", "api")
    events = events_of(stream)
    assert events[:-1] == [TextDelta("Gern"), TextDelta(", ich"), TextDelta(" lege den"), TextDelta(" Rückruf an.")]
    done = events[-1]
    assert (done.finish_reason, done.text, done.tool_calls) == ("stop", "Gern, ich lege den Rückruf an.", ())
    assert (done.input_tokens, done.output_tokens, done.lane, done.mode, done.cost_eur) == (120, 9, "chat-local",
                                                                                          "api", 0.0)
    assert outcomes(done) == [("chat-local", "ok")]
    usage = LaneUsage.objects.get(lane_id="chat-local")
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (1, 120, 9)


def test_a_tool_call_whose_arguments_arrive_in_several_deltas_is_handed_on_whole(db, live, chat_server):
    arguments = json.dumps({"phone": "+491712345678", "when": "tomorrow-am"})
    lane = chat_server(Reply(text="Einen Moment.", tool_calls=[FakeToolCall("call_7", "create_callback", arguments,
                                                                            pieces=5)]))
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    events = events_of(gateway_chat(messages=HISTORY, tools=[CALLBACK_TOOL]))
    call = ToolCall(id="call_7", name="create_callback", arguments={"phone": "+491712345678", "when": "tomorrow-am"})
    assert events[:-1] == [TextDelta("Einen "), TextDelta("Moment."), call]
    done = events[-1]
    assert (done.finish_reason, done.tool_calls) == ("tool_calls", (call,))
    # The answer goes back into the history as the wire format has it.
    assert done.assistant_message() == {"role": "assistant", "content": "Einen Moment.", "tool_calls": [
        {"id": "call_7", "type": "function", "function": {"name": "create_callback", "arguments": arguments}}]}


def test_the_deltas_of_parallel_tool_calls_are_joined_by_their_index(db, live, chat_server):
    def chunk(delta, finish=None):
        return ("data: " + json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})).encode()
    lines = [chunk({"role": "assistant", "content": None}), b"",
             chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "lookup", "arguments": ""}},
                                   {"index": 1, "id": "b", "function": {"name": "lookup", "arguments": '{"q"'}}]}),
             b"", chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q": "Öffn'}}]}), b"",
             chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': "Preise"}'}}]}), b"",
             chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ungszeiten"}'}}]}), b"",
             chunk({}, "tool_calls"), b"", b"data: [DONE]", b""]
    lane = chat_server(Reply(raw_lines=lines))
    load_lanes(streaming_lane("chat-local", endpoint=lane.url))
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    events = events_of(gateway_chat(messages=HISTORY, tools=[tool]))
    assert events[:-1] == [ToolCall("a", "lookup", {"q": "Öffnungszeiten"}), ToolCall("b", "lookup", {"q": "Preise"})]
    assert events[-1].finish_reason == "tool_calls"


def test_a_lane_that_answers_500_is_skipped_and_cooled_down(db, live, chat_server):
    broken, good = chat_server(Reply(status=500)), chat_server(Reply(text="Hier ist die Antwort."))
    load_lanes(streaming_lane("chat-a", endpoint=broken.url, priority=10),
               streaming_lane("chat-b", endpoint=good.url, priority=20))
    done = events_of(gateway_chat(messages=HISTORY))[-1]
    assert (done.lane, done.text) == ("chat-b", "Hier ist die Antwort.")
    assert outcomes(done) == [("chat-a", "server_error"), ("chat-b", "ok")]
    assert list(LaneCooldown.objects.values_list("lane_id", flat=True)) == ["chat-a"]
    # The next turn does not call it while it cools down.
    done = events_of(gateway_chat(messages=HISTORY))[-1]
    assert outcomes(done) == [("chat-a", "cooldown"), ("chat-b", "ok")]
    assert len(broken.requests) == 1


def test_a_lane_without_a_first_token_in_time_is_skipped(db, live, chat_server):
    stalled = chat_server(Reply(text="Zu spät.", hold=threading.Event()))
    good = chat_server(Reply(text="Rechtzeitig."))
    load_lanes(streaming_lane("chat-a", endpoint=stalled.url, priority=10),
               streaming_lane("chat-b", endpoint=good.url, priority=20))
    stream = gateway_chat(messages=HISTORY, first_token_timeout=0.3)
    done = events_of(stream)[-1]
    assert done.text == "Rechtzeitig."
    assert outcomes(done) == [("chat-a", "timeout"), ("chat-b", "ok")]
    assert done.attempts[0].detail == "no first token in time"
    assert 300 <= done.attempts[0].ms < 2000
    assert LaneCooldown.objects.filter(lane_id="chat-a").exists()


@pytest.mark.parametrize("lines, detail", [
    ([b"data: {not json", b""], "an event of the stream is not JSON"),
    ([b"<html>Bad Gateway</html>"], "the stream is not server-sent events"),
    ([b'data: {"choices": [{"delta": {"content": 42}}]}', b""], "the delta's content is not a string"),
    ([b'data: {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "x", "function": {"name": "lookup", '
      b'"arguments": "{\\"q\\": "}}]}, "finish_reason": "tool_calls"}]}', b"", b"data: [DONE]", b""],
     "the arguments of the tool call lookup are not a JSON object"),
    ([b'data: {"choices": [{"delta": {"role": "assistant"}}]}', b""], "the stream ended before the answer did"),
    ([b'data: {"error": {"message": "model overloaded"}}', b""], "the lane reported an error: model overloaded"),
])
def test_a_malformed_stream_is_the_lanes_failure_and_the_next_lane_answers(db, live, chat_server, lines, detail):
    bad, good = chat_server(Reply(raw_lines=lines)), chat_server(Reply(text="Ersatzantwort."))
    load_lanes(streaming_lane("chat-a", endpoint=bad.url, priority=10),
               streaming_lane("chat-b", endpoint=good.url, priority=20))
    done = events_of(gateway_chat(messages=HISTORY, tools=[CALLBACK_TOOL | {"function": {"name": "lookup"}}]))[-1]
    assert done.text == "Ersatzantwort."
    assert [(a.lane, a.outcome == "ok" or a.detail) for a in done.attempts] == [("chat-a", detail), ("chat-b", True)]


def test_an_answer_larger_than_1_mb_or_a_line_over_256_kb_is_refused(db, live, chat_server):
    piece = "x" * 200_000
    chunk = ('data: {"choices": [{"delta": {"content": "' + piece + '"}}]}').encode()
    huge = chat_server(Reply(raw_lines=[chunk, b""] * 6))
    long_line = chat_server(Reply(raw_lines=[b"data: " + b"y" * 300_000, b""]))
    good = chat_server(Reply(text="Kurz."))
    load_lanes(streaming_lane("chat-a", endpoint=long_line.url, priority=10),
               streaming_lane("chat-b", endpoint=good.url, priority=30))
    done = events_of(gateway_chat(messages=HISTORY))[-1]
    assert done.attempts[0].detail == "a line of the answer is longer than 262144 bytes"
    load_lanes(streaming_lane("chat-c", endpoint=huge.url, priority=10),
               streaming_lane("chat-b", endpoint=good.url, priority=30))
    with pytest.raises(AnswerInterrupted) as broken:  # its first 200 KB were handed on already
        events_of(gateway_chat(messages=HISTORY))
    assert broken.value.details["detail"] == "the answer is larger than 1048576 bytes"


def test_a_lane_that_breaks_off_after_its_first_token_ends_the_turn_clearly(db, live, chat_server):
    breaking = chat_server(Reply(pieces=["Die Praxis", " ist", " heute"], break_after=3))
    spare = chat_server(Reply(text="Nie gefragt."))
    load_lanes(streaming_lane("chat-a", endpoint=breaking.url, priority=10),
               streaming_lane("chat-b", endpoint=spare.url, priority=20))
    stream = gateway_chat(messages=HISTORY)
    received = []
    with pytest.raises(AnswerInterrupted) as broken:
        for event in stream:
            received.append(event)
    assert received == [TextDelta("Die Praxis"), TextDelta(" ist")]  # what came before stands
    assert broken.value.status == 502
    assert broken.value.details["lane"] == "chat-a"
    assert broken.value.details["outcome"] == "connection_error"
    assert spare.requests == []  # no failover after the first token
    assert LaneCooldown.objects.filter(lane_id="chat-a").exists()
    assert LaneUsage.objects.get(lane_id="chat-a").failures == 1


def test_a_stream_that_stalls_mid_answer_ends_after_the_idle_time(db, live, chat_server, settings):
    settings.GATEWAY_STREAM_IDLE_SEC = 0.3
    lane = chat_server(Reply(pieces=["Einen", " Moment"], stall_after=2, stall=threading.Event()))
    load_lanes(streaming_lane("chat-a", endpoint=lane.url))
    stream = gateway_chat(messages=HISTORY)
    assert next(stream) == TextDelta("Einen")
    waited = time.monotonic()
    with pytest.raises(AnswerInterrupted) as broken:
        next(stream)
    assert 0.3 <= time.monotonic() - waited < 1.5  # the idle time, not the first token's 2 s
    assert (broken.value.details["outcome"], broken.value.details["detail"]) == (
        "timeout", "the stream stalled for 0.3 s")


def test_without_streaming_a_lane_that_fails_mid_answer_is_skipped(db, live, chat_server):
    breaking = chat_server(Reply(pieces=["Die Praxis", " ist", " heute"], break_after=3))
    spare = chat_server(Reply(text="Die ganze Antwort."))
    load_lanes(streaming_lane("chat-a", endpoint=breaking.url, priority=10),
               streaming_lane("chat-b", endpoint=spare.url, priority=20))
    events = events_of(gateway_chat(messages=HISTORY, stream=False))
    assert "".join(event.text for event in events if isinstance(event, TextDelta)) == "Die ganze Antwort."
    assert outcomes(events[-1]) == [("chat-a", "connection_error"), ("chat-b", "ok")]


def test_a_lane_that_does_not_stream_is_asked_for_one_answer_with_its_tool_calls(db, live, chat_server):
    arguments = '{"phone": "+491712345678"}'
    lane = chat_server(Reply(text="", tool_calls=[FakeToolCall("c1", "create_callback", arguments)]))
    load_lanes(chat_lane("chat-plain", endpoint=lane.url))  # params.streaming false
    events = events_of(gateway_chat(messages=HISTORY, tools=[CALLBACK_TOOL]))
    assert lane.bodies[0]["stream"] is False
    assert events[0] == ToolCall("c1", "create_callback", {"phone": "+491712345678"})
    assert events[-1].finish_reason == "tool_calls"


def test_the_named_lane_is_tried_first_then_the_routes_order(db, live, chat_server):
    first, named = chat_server(Reply(text="Erste.")), chat_server(Reply(status=503))
    load_lanes(streaming_lane("chat-a", endpoint=first.url, priority=10),
               streaming_lane("chat-b", endpoint=named.url, priority=20))
    done = events_of(gateway_chat(messages=HISTORY, lane="chat-b"))[-1]
    assert outcomes(done) == [("chat-b", "server_error"), ("chat-a", "ok")]


def test_an_unknown_lane_is_a_400_naming_the_lanes(db, live, chat_server):
    load_lanes(streaming_lane("chat-a", endpoint="http://127.0.0.1:9/v1/chat/completions"))
    with pytest.raises(ValidationFailed) as refused:
        gateway_chat(messages=HISTORY, lane="gpt-4o")
    assert refused.value.details == {"lane": ["No chat lane of the registry is called 'gpt-4o'. Send one of: chat-a."]}


def test_paid_lanes_only_within_the_budget_and_422_when_only_the_budget_stands_in_the_way(db, live, chat_server,
                                                                                         lane_settings):
    paid = chat_server(Reply(text="Bezahlt.", usage=(1000, 1000)))
    load_lanes(streaming_lane("chat-paid", endpoint=paid.url, eur=1.8))
    lane_settings("chat-paid", key="sk-paid")
    with pytest.raises(OverBudget) as refused:
        gateway_chat(messages=HISTORY, max_eur=0)
    assert refused.value.details["lane"] == "chat-paid"
    assert paid.requests == []
    done = events_of(gateway_chat(messages=HISTORY, max_eur=0.01))[-1]
    assert (done.lane, done.cost_eur) == ("chat-paid", pytest.approx(1.8 * 2000 / 1_000_000))
    assert paid.requests[0][1]["Authorization"] == "Bearer sk-paid"


def test_no_lane_answering_is_a_503_with_every_attempt(db, live, chat_server, refused_url):
    failing = chat_server(Reply(status=429, headers={"Retry-After": "1"}))
    load_lanes(streaming_lane("chat-a", endpoint=refused_url, priority=10),
               streaming_lane("chat-b", endpoint=failing.url, priority=20))
    with pytest.raises(NoLaneAnswered) as refused:
        gateway_chat(messages=HISTORY)
    assert outcomes(refused.value.details) == [("chat-a", "connection_error"), ("chat-b", "rate_limited")]


def test_closing_the_stream_mid_answer_stops_reading_and_counts_the_turn(db, live, chat_server):
    lane = chat_server(Reply(pieces=["Erstens", " zweitens"], stall_after=2, stall=threading.Event()))
    load_lanes(streaming_lane("chat-a", endpoint=lane.url))
    with gateway_chat(messages=HISTORY) as stream:
        assert next(stream) == TextDelta("Erstens")  # the caller interrupts here
    assert list(stream) == []
    usage = LaneUsage.objects.get(lane_id="chat-a")
    assert (usage.requests, usage.failures, usage.output_tokens) == (1, 0, len("Erstens"))


@pytest.mark.parametrize("messages, tools, tool_choice, details", [
    ([{"role": "robot", "content": "x"}], None, None, {"messages[0].role": ["Must be one of: system, user, "
                                                                              "assistant, tool."]}),
    ([{"role": "tool", "content": "42"}], None, None, {"messages[0].tool_call_id": [
        "A tool message names the call it answers."]}),
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], None, None,
     {"messages[0].content[0]": ['Only text parts are supported: {"type": "text", "text": …}.']}),
    ([{"role": "user", "content": "x", "mood": "good"}], None, None, {"messages[0].mood": [
        "Unknown field of a user message. Accepted: content, name, role."]}),
    ([], None, None, {"messages": ["Must be a list of 1 to 1000 messages."]}),
    (HISTORY, [CALLBACK_TOOL], {"type": "function", "function": {"name": "transfer_call"}},
     {"tool_choice": ["Names no tool of the request. Tools: create_callback."]}),
    (HISTORY, None, "required", {"tool_choice": ["'required' needs tools."]}),
])
def test_malformed_turns_are_refused_naming_each_field(db, messages, tools, tool_choice, details):
    with pytest.raises(ValidationFailed) as refused:
        gateway_chat(messages=messages, tools=tools, tool_choice=tool_choice)
    assert refused.value.details == details


def test_the_mock_lane_streams_its_rule_sets_answer_word_by_word(db):
    stream = gateway_chat(messages=[{"role": "system", "content": "Sei freundlich."},
                                    {"role": "user", "content": "Wann haben Sie geöffnet?"}])
    events = list(stream)
    assert (stream.lane, stream.mode) == ("chat-gateway-mock", "mock")
    assert events[0] == TextDelta("Die ")
    assert events[-1].text == "Die Praxis ist Montag bis Freitag von 8 bis 18 Uhr geöffnet, samstags von 9 bis 13 Uhr."
    assert "".join(event.text for event in events[:-1]) == events[-1].text
    # Deterministic: the same turn, the same answer.
    again = list(gateway_chat(messages=[{"role": "system", "content": "Sei freundlich."},
                                        {"role": "user", "content": "Wann haben Sie geöffnet?"}]))
    assert again[:-1] == events[:-1]


def test_a_turn_that_requires_a_tool_skips_a_mock_lane_without_tools(db):
    # The rule set calls no tools (agent_app installs a dialogue policy that does).
    previous = register_mock_policy(RuleSetPolicy())
    try:
        with pytest.raises(NoLaneAnswered) as refused:
            gateway_chat(messages=HISTORY, tools=[CALLBACK_TOOL], tool_choice="required")
    finally:
        register_mock_policy(previous)
    assert refused.value.details["attempts"][0]["outcome"] == "unavailable"


def test_a_dialogue_policy_plugs_in_as_the_mock_lane_and_calls_tools(db):
    class CallbackPolicy:
        calls_tools = True

        def __call__(self, request):
            yield TextDelta("Ich notiere den Rückruf.")
            if "create_callback" in request.tool_names():
                yield ToolCall("call_1", "create_callback", {"phone": "+491712345678"})

    previous = register_mock_policy(CallbackPolicy())
    try:
        events = list(gateway_chat(messages=HISTORY, tools=[CALLBACK_TOOL], tool_choice="required"))
    finally:
        register_mock_policy(previous)
    assert events[:-1] == [TextDelta("Ich notiere den Rückruf."),
                           ToolCall("call_1", "create_callback", {"phone": "+491712345678"})]
    assert (events[-1].finish_reason, events[-1].lane) == ("tool_calls", "chat-gateway-mock")


@pytest.mark.parametrize("streaming", [True, False])
def test_an_ollama_lane_is_spoken_to_in_its_own_dialect(db, live, chat_server, streaming):
    lane = chat_server(Reply(pieces=["Gern", ", einen Moment."], usage=(30, 6),
                             tool_calls=[FakeToolCall("ignored", "create_callback", '{"phone": "+491712345678"}')]),
                       dialect="ollama")
    entry = streaming_lane("chat-llama", endpoint=lane.url) if streaming else chat_lane("chat-llama", endpoint=lane.url)
    load_lanes(entry)
    history = HISTORY + [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
            "name": "create_callback", "arguments": '{"phone": "+491712345678"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'}]
    events = list(gateway_chat(messages=history, tools=[CALLBACK_TOOL], temperature=0.3, max_tokens=100))
    body = lane.bodies[0]
    assert body["stream"] is streaming
    assert body["options"] == {"num_predict": 100, "temperature": 0.3}
    assert body["tools"] == [CALLBACK_TOOL]
    assert body["messages"][-2:] == [
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "create_callback", "arguments": {"phone": "+491712345678"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}', "tool_name": "create_callback"}]
    texts = [event.text for event in events if isinstance(event, TextDelta)]
    assert texts == (["Gern", ", einen Moment."] if streaming else ["Gern, einen Moment."])
    call, = [event for event in events if isinstance(event, ToolCall)]
    assert (call.name, call.arguments, call.id.startswith("call_")) == ("create_callback",
                                                                         {"phone": "+491712345678"}, True)
    done = events[-1]
    assert (done.finish_reason, done.input_tokens, done.output_tokens) == ("tool_calls", 30, 6)


@pytest.mark.parametrize("script", ["Bitte rufen Sie mich morgen zurück. ", "請明天上午給我回電。", "🙂👍🏽🎉"])
def test_a_turns_bill_never_passes_its_budget_whatever_the_script(db, live, chat_server, lane_settings, script):
    """The lane bills like a byte-level BPE tokenizer (tests/gateway_app/test_budget.py)
    the messages, the tools' JSON and every answer token it was allowed; the history
    grows turn by turn until the worst case no longer fits and the turn is refused."""
    from tests.gateway_app.test_budget import PRICE, bpe_tokens

    bills = []

    def bill(body):
        prompt = 3 + sum(4 + bpe_tokens(message.get("content") or "") for message in body["messages"])
        prompt += sum(bpe_tokens(json.dumps(tool, ensure_ascii=False)) for tool in body.get("tools", []))
        bills.append(PRICE * (prompt + body["max_tokens"]) / 1_000_000)
        return Reply(text="Gut.", usage=(prompt, body["max_tokens"]))

    lane = chat_server(bill)
    load_lanes(streaming_lane("chat-paid", endpoint=lane.url, eur=PRICE))
    lane_settings("chat-paid", key="sk-paid")
    budget, answered, refused = 0.002, 0, 0
    for turns in range(1, 400, 20):
        history = [{"role": "user" if index % 2 == 0 else "assistant", "content": script * 3} for index in range(turns)]
        try:
            done = list(gateway_chat(messages=history, tools=[CALLBACK_TOOL], max_eur=budget))[-1]
        except OverBudget:
            refused += 1
            continue
        answered += 1
        assert bills[-1] <= budget and done.cost_eur <= budget
    assert answered and refused  # both sides of the bound were reached
    assert len(bills) == answered  # a refused turn cost nothing


@pytest.fixture
def unanswered_url():
    """A loopback port whose accept queue is full: a connect there waits (its SYN is
    dropped) until the client gives up, as a host that does not answer."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    filler = socket.create_connection(server.getsockname(), timeout=5)  # fills the queue, never accepted
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1/chat/completions"
    filler.close()
    server.close()


def test_a_lane_that_does_not_accept_the_connection_is_given_up_after_the_connect_timeout(db, live, chat_server,
                                                                                          unanswered_url, settings):
    settings.GATEWAY_CONNECT_TIMEOUT_SEC = 0.3
    good = chat_server(Reply(text="Verbunden."))
    load_lanes(streaming_lane("chat-a", endpoint=unanswered_url, priority=10),
               streaming_lane("chat-b", endpoint=good.url, priority=20))
    done = list(gateway_chat(messages=HISTORY))[-1]
    assert [(a.lane, a.outcome, a.detail) for a in done.attempts[:1]] == [
        ("chat-a", "timeout", "no connection within 0.3 s")]
    assert 300 <= done.attempts[0].ms < 1500  # well before the first-token deadline of 2 s


def test_a_lane_that_streams_past_the_turns_deadline_ends_the_turn(db, live, chat_server):
    slow = chat_server(Reply(pieces=[f"Wort{index} " for index in range(100)], tokens_per_second=20))
    load_lanes(streaming_lane("chat-a", endpoint=slow.url))
    stream = gateway_chat(messages=HISTORY, deadline=0.6)
    received = []
    with pytest.raises(AnswerInterrupted) as broken:
        for event in stream:
            received.append(event)
    assert (broken.value.details["outcome"], broken.value.details["detail"]) == (
        "timeout", "the answer did not end in time")
    assert 3 <= len(received) < 100


def test_closing_from_another_thread_ends_a_wait_for_the_next_event_at_once(transactional_db, live, chat_server,
                                                                          settings):
    """The voice agent reads the stream in a worker thread; the caller barges in and the
    event loop closes the stream: the blocked read ends now, not after the idle time."""
    settings.GATEWAY_STREAM_IDLE_SEC = 10
    lane = chat_server(Reply(pieces=["Erstens", " zweitens"], stall_after=2, stall=threading.Event()))
    load_lanes(streaming_lane("chat-a", endpoint=lane.url))
    stream = gateway_chat(messages=HISTORY, deadline=20)
    assert next(stream) == TextDelta("Erstens")
    outcome = {}

    def read_on():
        try:
            outcome["event"] = next(stream)
        except StopIteration:
            outcome["event"] = "ended"
        except Exception as exc:  # noqa: BLE001 - reported to the test
            outcome["event"] = exc

    reader = threading.Thread(target=read_on)
    reader.start()
    while reader.is_alive() and not stream._events.gi_running:  # the reader is inside next(), blocked on the lane
        reader.join(0.001)
    closed = time.monotonic()
    stream.close()
    reader.join(3)
    assert not reader.is_alive()
    assert time.monotonic() - closed < 1  # at once: not after the first token's 2 s or the idle time
    assert outcome["event"] == "ended"
    usage = LaneUsage.objects.get(lane_id="chat-a")
    assert (usage.requests, usage.failures) == (1, 0)
    assert not LaneCooldown.objects.exists()
