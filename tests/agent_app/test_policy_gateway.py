"""The offline dialogue policy as the gateway serves it: agent_app installs it as the
mock lane's policy, so a turn that offers tools, through gateway_chat or
POST /v1/chat/completions (the `openai` package as the client), is answered with
its tool calls; a turn without tools keeps the rule set's answer."""
import json
import threading
import time
import urllib.request

import openai
import pytest

from agent_app.policy import DialoguePolicy
from gateway_app.providers.mock import mock_policy
from gateway_app.services import gateway_chat
from gateway_app.turns import ChatDone, TextDelta, ToolCall

TOKEN = "gw-test-token-policy-5d2e8a"
# The tool as the acceptance probe offers it: a phone, nothing else.
CALLBACK_TOOL = {"type": "function", "function": {
    "name": "create_callback", "description": "Rückruf anlegen",
    "parameters": {"type": "object", "properties": {"phone": {"type": "string"}}, "required": ["phone"]}}}
REQUEST = [{"role": "user", "content": "Bitte rufen Sie mich zurück unter 0176 12345678."}]


@pytest.fixture(autouse=True)
def _mock_gateway(mock_gateway):
    """The gateway's documented defaults: no registry lanes, so its own mock lane answers."""
    mock_gateway.GATEWAY_STATIC_TOKEN = TOKEN


def test_agent_app_installs_the_dialogue_policy_as_the_mock_lanes():
    assert isinstance(mock_policy(), DialoguePolicy)


def test_a_turn_with_tools_on_the_mock_lane_calls_create_callback_and_confirms_after_the_result(db):
    events = list(gateway_chat(messages=REQUEST, tools=[CALLBACK_TOOL]))
    done = events[-1]
    assert isinstance(done, ChatDone) and (done.lane, done.mode, done.finish_reason) == (
        "chat-gateway-mock", "mock", "tool_calls")
    assert [event for event in events if isinstance(event, ToolCall)] == [
        ToolCall("call_1", "create_callback", {"phone": "+4917612345678"})]
    assert done.text == "".join(event.text for event in events if isinstance(event, TextDelta))
    history = REQUEST + [done.assistant_message(),
                         {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"leadId": "ld_1"})}]
    again = list(gateway_chat(messages=history, tools=[CALLBACK_TOOL]))[-1]
    assert again.finish_reason == "stop" and again.tool_calls == ()
    assert again.text.startswith("Vielen Dank, wir rufen Sie unter der Nummer 0176 12345678 zurück.")


def test_a_turn_that_requires_a_tool_is_answered_by_the_mock_lane_now(db):
    lookup = {"type": "function", "function": {"name": "lookup_knowledge", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}}
    done = list(gateway_chat(messages=[{"role": "user", "content": "Haben Sie samstags offen?"}], tools=[lookup],
                             tool_choice="required"))[-1]
    assert [(call.name, call.arguments) for call in done.tool_calls] == [
        ("lookup_knowledge", {"query": "Haben Sie samstags offen?"})]


def test_the_voice_agents_question_for_the_number(db):
    messages = [{"role": "system", "content": "Sie sind die Assistenz der Praxis Probe.\nKanal: Telefon"},
                {"role": "user", "content": "Ich hätte gern einen Rückruf."}]
    done = list(gateway_chat(messages=messages, tools=[CALLBACK_TOOL], language="de"))[-1]
    assert done.text == "Gern ruft Sie ein Mitarbeiter zurück. Unter welcher Nummer sind Sie am besten erreichbar?"


@pytest.fixture
def client(live_server):
    return openai.OpenAI(base_url=f"{live_server.url}/v1", api_key=TOKEN, max_retries=0, timeout=20)


def test_chat_completions_with_the_openai_client_call_the_tool_whole_and_streamed(client):
    completion = client.chat.completions.create(model="auto", messages=REQUEST, tools=[CALLBACK_TOOL])
    choice, = completion.choices
    assert (completion.model, choice.finish_reason) == ("chat-gateway-mock", "tool_calls")
    call, = choice.message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("create_callback",
                                                                         {"phone": "+4917612345678"})
    chunks = list(client.chat.completions.create(model="auto", messages=REQUEST, tools=[CALLBACK_TOOL],
                                                 stream=True))
    streamed = [delta for chunk in chunks if chunk.choices for delta in (chunk.choices[0].delta.tool_calls or [])]
    assert {delta.function.name for delta in streamed if delta.function.name} == {"create_callback"}
    assert json.loads("".join(delta.function.arguments or "" for delta in streamed)) == {"phone": "+4917612345678"}
    # The tool's result sent back as the SDK's documentation shows: the confirmation.
    messages = REQUEST + [choice.message, {"role": "tool", "tool_call_id": call.id, "content": '{"ok": true}'}]
    second = client.chat.completions.create(model="auto", messages=messages, tools=[CALLBACK_TOOL])
    assert second.choices[0].message.content.startswith("Vielen Dank, wir rufen Sie")


def test_chat_completions_without_tools_keep_the_rule_sets_answer(client):
    completion = client.chat.completions.create(model="auto", messages=[{"role": "user", "content": "ping"}])
    assert completion.choices[0].message.content == "pong"


def test_a_tool_pattern_that_backtracks_neither_hangs_the_answer_nor_health(client, live_server):
    # Python's re took about ten seconds for these 28 characters and held the GIL, so
    # the server's other threads (/health) waited too; RE2 answers in linear time.
    lookup = {"type": "function", "function": {"name": "lookup_knowledge", "parameters": {
        "type": "object", "properties": {"query": {"type": "string", "pattern": "^(.+)+x$"}}, "required": ["query"]}}}
    answered = {}
    health_seconds(live_server)  # the server's first request loads what every request needs

    def ask():
        started = time.monotonic()
        client.chat.completions.create(model="auto", messages=[{"role": "user", "content": "bitte " + "a" * 22}],
                                       tools=[lookup], tool_choice="required")
        answered["seconds"] = time.monotonic() - started

    asking = threading.Thread(target=ask)
    asking.start()
    health = []
    while asking.is_alive() and len(health) < 50:
        health.append(health_seconds(live_server))
    asking.join(30)
    assert answered.get("seconds", 99) < 3 and max(health) < 1, (answered, max(health))


def health_seconds(live_server):
    started = time.monotonic()
    with urllib.request.urlopen(f"{live_server.url}/health", timeout=30) as response:
        assert response.status == 200
    return time.monotonic() - started
