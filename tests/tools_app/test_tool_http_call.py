"""Calling a tenant's HTTP tool: arguments checked against its parameters, the POST
signed by the Standard Webhooks scheme (verified here with the reference library),
the answer's JSON given back, every failure a tool error and never an exception."""
import asyncio
import json
import logging
import time

import pytest
from django.test import override_settings
from standardwebhooks import Webhook

from agent_app.threads import off_loop
from console.assistants.models import Assistant
from tools_app.services import http_tool_create, http_tool_rotate_secret, tool_http_call, tool_run

pytestmark = pytest.mark.django_db


def test_a_call_is_signed_verifiable_and_its_answer_comes_back(tool_and_secret, receiver):
    tool, secret = tool_and_secret

    result = tool_http_call(tool=tool, call_id="cl_probe", arguments={"datum": "2026-12-01"})

    assert result == {"ok": True, "tool": "termin_pruefen", "status": 200, "result": {"frei": True}}
    (path, headers, body), = receiver.requests
    assert path == "/tools/termin" and headers["content-type"] == "application/json"
    assert headers["webhook-id"].startswith("tc_")
    verified = Webhook(secret).verify(body, headers)
    assert verified == {"type": "tool.call", "tool": "termin_pruefen", "callId": "cl_probe",
                        "arguments": {"datum": "2026-12-01"}}


def test_each_call_has_its_own_id(tool_and_secret, receiver):
    tool, _ = tool_and_secret
    for _ in range(2):
        tool_http_call(tool=tool, call_id="cl_probe", arguments='{"datum": "2026-12-01"}')
    assert len({headers["webhook-id"] for _, headers, _ in receiver.requests}) == 2


def test_another_secret_does_not_verify(tool_and_secret, receiver):
    tool, _ = tool_and_secret
    tool_http_call(tool=tool, call_id="cl_probe", arguments={"datum": "2026-12-01"})
    _, headers, body = receiver.requests[0]
    with pytest.raises(Exception):  # noqa: B017 - the library's own WebhookVerificationError
        Webhook("whsec_" + "QUJD" * 8).verify(body, headers)


@pytest.mark.parametrize("arguments", [{}, {"datum": "morgen"}, {"datum": "2026-12-01", "x": 1}, "not json", [1]])
def test_arguments_that_do_not_fit_are_a_tool_error_and_nothing_is_sent(tool_and_secret, receiver, arguments):
    tool, _ = tool_and_secret
    result = tool_http_call(tool=tool, call_id="cl_probe", arguments=arguments)
    assert result["ok"] is False and result["error"] == "invalid_arguments" and result["message"]
    assert receiver.requests == []


@pytest.mark.parametrize(("answer", "error"), [
    ((500, b'{"fehler": 1}'), "http_error"),
    ((302, b""), "http_error"),
    ((200, b"<html>nein</html>"), "invalid_json"),
    ((200, b'{"x": "' + b"a" * 17_000 + b'"}'), "too_large"),
])
def test_a_failing_tool_is_a_tool_error(tool_and_secret, receiver, answer, error):
    tool, _ = tool_and_secret
    receiver.answers = [answer]
    result = tool_http_call(tool=tool, call_id="cl_probe", arguments={"datum": "2026-12-01"})
    assert result["ok"] is False and result["error"] == error, result


def test_an_empty_answer_is_a_result_of_null(tool_and_secret, receiver):
    tool, _ = tool_and_secret
    receiver.answers = [(204, b"")]
    assert tool_http_call(tool=tool, call_id="cl", arguments={"datum": "2026-12-01"})["result"] is None


def test_a_slow_tool_is_cut_at_its_timeout(tool_and_secret, receiver):
    tool, _ = tool_and_secret
    tool.timeout_ms = 300
    receiver.hold.clear()  # the receiver answers only when the test ends
    started = time.monotonic()
    result = tool_http_call(tool=tool, call_id="cl_probe", arguments={"datum": "2026-12-01"})
    assert result["ok"] is False and result["error"] == "timeout"
    assert time.monotonic() - started < 2


def test_a_receiver_that_is_down_is_a_tool_error(tool_and_secret, receiver):
    tool, _ = tool_and_secret
    receiver.stop()
    result = tool_http_call(tool=tool, call_id="cl_probe", arguments={"datum": "2026-12-01"})
    assert result == {"ok": False, "tool": "termin_pruefen", "error": "connection_failed",
                      "message": "The tool failed: connection failed.", "status": None}


def test_private_addresses_are_refused_at_call_time_outside_tests(tool_and_secret, receiver):
    tool, _ = tool_and_secret
    with override_settings(OUTBOUND_ALLOW_PRIVATE_TARGETS=False):
        result = tool_http_call(tool=tool, call_id="cl_probe", arguments={"datum": "2026-12-01"})
    assert result["ok"] is False and result["error"] == "refused"
    assert "is not a public host" in result["message"] and receiver.requests == []


def test_after_a_rotation_both_secrets_verify_for_the_overlap(tool_and_secret, receiver):
    tool, old = tool_and_secret
    tool, new = http_tool_rotate_secret(tool=tool)
    tool_http_call(tool=tool, call_id="cl_probe", arguments={"datum": "2026-12-01"})
    _, headers, body = receiver.requests[0]
    assert len(headers["webhook-signature"].split()) == 2
    for secret in (old, new):
        assert json.loads(body) == Webhook(secret).verify(body, headers)


def test_tool_run_calls_only_the_assistants_own_tools(tool_and_secret, receiver, tenant_a):
    tool, _ = tool_and_secret
    without = Assistant.objects.create(tenant=tenant_a, name="Ohne", tools=["end_call"])
    with_tool = Assistant.objects.create(tenant=tenant_a, name="Mit", tools=[tool.pk])

    refused = tool_run(assistant=without, call_id="cl_probe", name="termin_pruefen", arguments={"datum": "2026-12-01"})
    called = tool_run(assistant=with_tool, call_id="cl_probe", name="termin_pruefen",
                      arguments='{"datum": "2026-12-01"}')

    assert refused["ok"] is False and refused["error"] == "unknown_tool"
    assert called["ok"] is True and called["result"] == {"frei": True}
    assert len(receiver.requests) == 1


def test_a_backtracking_parameter_pattern_does_not_stall_the_event_loop(tenant_a, receiver):
    # The conversation runs tool calls in a worker thread (off_loop); Python's re held the
    # GIL for the whole match (about ten seconds for these 28 characters), so the event
    # loop that moves every call's audio stood still. RE2 matches in linear time.
    tool, _ = http_tool_create(tenant=tenant_a, data={
        "name": "suche", "url": receiver.url,
        "parameters": {"type": "object", "properties": {"q": {"type": "string", "pattern": "^(.+)+x$"}}}})

    async def conversation():
        loop = asyncio.get_running_loop()
        gaps = []

        async def heartbeat():
            last = loop.time()
            while True:
                await asyncio.sleep(0.01)
                gaps.append(loop.time() - last)
                last = loop.time()

        beating = asyncio.create_task(heartbeat())
        await asyncio.sleep(0.05)
        result = await off_loop(tool_http_call)(tool=tool, call_id="cl_probe", arguments={"q": "bitte " + "a" * 22})
        await asyncio.sleep(0.05)
        beating.cancel()
        return result, max(gaps)

    result, longest_gap = asyncio.run(conversation())
    assert result["ok"] is False and result["error"] == "invalid_arguments" and "does not match" in result["message"]
    assert longest_gap < 0.5 and receiver.requests == []


def test_arguments_nested_thousands_deep_are_a_tool_error_logged_at_no_error_level(tool_and_secret, receiver,
                                                                                    tenant_a, caplog):
    tool, _ = tool_and_secret
    assistant = Assistant.objects.create(tenant=tenant_a, name="Mit", tools=[tool.pk])
    with caplog.at_level(logging.WARNING):
        result = tool_run(assistant=assistant, call_id="cl_probe", name="termin_pruefen", arguments="[" * 5000)
    assert result["ok"] is False and result["error"] == "invalid_arguments"
    assert "nests deeper than" in result["message"]
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == [] and receiver.requests == []


@pytest.mark.parametrize("answer", [b'{"a": NaN}', b'{"a": Infinity}', b"[-Infinity]", b'{"a": 1e999}',
                                    b"[" * 5000, b'{"a": "\\u0000"}'])
def test_an_answer_that_is_not_standard_json_is_invalid_json(tool_and_secret, receiver, answer, caplog):
    tool, _ = tool_and_secret
    receiver.answers = [(200, answer)]
    with caplog.at_level(logging.WARNING):
        result = tool_http_call(tool=tool, call_id="cl_probe", arguments={"datum": "2026-12-01"})
    assert result["ok"] is False and result["error"] == "invalid_json", result
    assert result["message"].startswith("The tool's answer")
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []
