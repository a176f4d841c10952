"""POST /v1/agent: the router's order, failover with every attempt reported, cooldowns
that later requests respect and that end, and the cost policy (zero-euro lanes first,
paid lanes only within max_eur)."""
import datetime
import logging

import pytest
from django.utils import timezone

from registry_app.models import LaneCooldown
from registry_app.routing import invalidate_lane_state
from tests.conftest import error_of, make_client
from tests.gateway_app.conftest import chat_lane, load_lanes


@pytest.fixture
def live(settings):
    """Lanes are called at their registry endpoints (not simulated), with short timeouts."""
    settings.GATEWAY_MODE = "live"
    settings.GATEWAY_TIMEOUT_SEC = 0.5
    settings.GATEWAY_DEADLINE_SEC = 5


def ask(gateway, prompt="Wann haben Sie geöffnet?", **extra):
    return gateway.post("/v1/agent", {"prompt": prompt, **extra}, format="json")


def outcomes(body):
    return [(attempt["lane"], attempt["outcome"]) for attempt in body["attempts"]]


def test_the_first_zero_euro_lane_answers_and_the_paid_lane_is_untouched(gateway, live, provider, lane_settings):
    free, paid = provider("answer", text="Kostenlos beantwortet."), provider("answer")
    load_lanes(chat_lane("chat-free", endpoint=free.url, priority=50),
               chat_lane("chat-paid", endpoint=paid.url, eur=1.8, priority=1, quality="frontier"))
    lane_settings("chat-paid", key="sk-paid")
    response = ask(gateway, max_eur=5)
    assert response.status_code == 200
    body = response.json()
    assert (body["text"], body["lane"], body["mode"], body["costEur"]) == ("Kostenlos beantwortet.", "chat-free",
                                                                          "api", 0)
    assert outcomes(body) == [("chat-free", "ok")]
    assert paid.requests == []


def test_failing_lanes_are_skipped_in_order_and_every_attempt_is_reported(gateway, live, provider, refused_url):
    failing, limited, slow, good = provider("fail"), provider("429"), provider("slow"), provider("answer")
    load_lanes(chat_lane("chat-a-refused", endpoint=refused_url, priority=10),
               chat_lane("chat-b-5xx", endpoint=failing.url, priority=20),
               chat_lane("chat-c-429", endpoint=limited.url, priority=30),
               chat_lane("chat-d-slow", endpoint=slow.url, priority=40),
               chat_lane("chat-e-good", endpoint=good.url, priority=50))
    body = ask(gateway).json()
    assert body["lane"] == "chat-e-good"
    assert outcomes(body) == [("chat-a-refused", "connection_error"), ("chat-b-5xx", "server_error"),
                              ("chat-c-429", "rate_limited"), ("chat-d-slow", "timeout"), ("chat-e-good", "ok")]
    assert [attempt["detail"] for attempt in body["attempts"][1:3]] == ["HTTP 503", "HTTP 429"]
    assert body["attempts"][3]["ms"] >= 400  # it was given the whole timeout
    assert set(LaneCooldown.objects.values_list("lane_id", flat=True)) == {
        "chat-a-refused", "chat-b-5xx", "chat-c-429", "chat-d-slow"}
    assert [len(fake.requests) for fake in (failing, limited, slow, good)] == [1, 1, 1, 1]


def test_a_lane_in_cooldown_is_skipped_until_the_cooldown_ends(gateway, live, provider, key_a):
    flaky, backup = provider("fail"), provider("answer", text="Ersatz")
    load_lanes(chat_lane("chat-flaky", endpoint=flaky.url, priority=10),
               chat_lane("chat-backup", endpoint=backup.url, priority=20))
    assert outcomes(ask(gateway).json()) == [("chat-flaky", "server_error"), ("chat-backup", "ok")]

    second = ask(gateway).json()
    assert outcomes(second) == [("chat-flaky", "cooldown"), ("chat-backup", "ok")]
    assert second["attempts"][0]["ms"] == 0
    assert second["attempts"][0]["detail"].startswith("cooldown until ")
    assert len(flaky.requests) == 1  # not called again while cooling down

    ready = gateway.get("/v1/ready").json()
    assert [cooldown["lane"] for cooldown in ready["cooldowns"]] == ["chat-flaky"]
    assert ready["cooldowns"][0]["reason"] == "server_error: HTTP 503"
    routed = make_client(key_a).get("/v2/registry/route?capability=chat").json()
    assert {item["lane"]: item["code"] for item in routed["excluded"]} == {"chat-flaky": "cooldown"}

    # The cooldown ends (its time has come) and the provider has recovered.
    LaneCooldown.objects.update(until=timezone.now() - datetime.timedelta(seconds=1))
    invalidate_lane_state()  # a change made behind the router's back; seen within a second otherwise
    flaky.behaviour, flaky.text = "answer", "Wieder da"
    third = ask(gateway).json()
    assert (third["lane"], third["text"], outcomes(third)) == ("chat-flaky", "Wieder da", [("chat-flaky", "ok")])
    assert not LaneCooldown.objects.exists()  # its failures in a row start from zero


def test_a_retry_after_longer_than_the_cooldown_is_respected(gateway, live, provider, settings):
    settings.GATEWAY_COOLDOWN_SEC = 0
    limited, backup = provider("429"), provider("answer")
    load_lanes(chat_lane("chat-limited", endpoint=limited.url, priority=10),
               chat_lane("chat-backup", endpoint=backup.url, priority=20))
    before = timezone.now()
    ask(gateway)
    until = LaneCooldown.objects.get(lane_id="chat-limited").until
    assert before + datetime.timedelta(seconds=1) <= until <= timezone.now() + datetime.timedelta(seconds=1)


def test_max_eur_0_never_touches_a_paid_lane(gateway, live, provider, refused_url, lane_settings):
    paid = provider("answer")
    load_lanes(chat_lane("chat-free", endpoint=refused_url, priority=10),
               chat_lane("chat-paid", endpoint=paid.url, eur=0.5, priority=1))
    lane_settings("chat-paid", key="sk-paid")
    response = ask(gateway, max_eur=0)
    assert response.status_code == 503
    error = error_of(response)
    assert error["code"] == "no_lane_answered"
    assert [(a["lane"], a["outcome"]) for a in error["details"]["attempts"]] == [
        ("chat-free", "connection_error"), ("chat-paid", "over_budget")]
    assert error["message"].startswith("No lane could answer the chat request; the last, chat-paid, over_budget: "
                                       "worst case ")
    assert paid.requests == []


def test_without_max_eur_the_default_from_settings_applies(gateway, live, provider, refused_url, lane_settings,
                                                           settings):
    paid = provider("answer")
    load_lanes(chat_lane("chat-free", endpoint=refused_url), chat_lane("chat-paid", endpoint=paid.url, eur=0.5))
    lane_settings("chat-paid", key="sk-paid")
    assert ask(gateway).status_code == 503  # GATEWAY_MAX_EUR is 0 by default
    assert paid.requests == []
    settings.GATEWAY_MAX_EUR = 0.01
    assert ask(gateway).json()["lane"] == "chat-paid"


def test_a_paid_lane_answers_when_no_free_lane_did_and_the_use_is_logged(gateway, live, provider, refused_url,
                                                                         lane_settings, caplog):
    paid = provider("answer", usage=(1000, 500))
    load_lanes(chat_lane("chat-free", endpoint=refused_url, priority=10),
               chat_lane("chat-paid", endpoint=paid.url, eur=1.8, priority=20))
    lane_settings("chat-paid", key="sk-paid-secret")
    with caplog.at_level(logging.INFO, logger="gateway_app.paid"):
        body = ask(gateway, max_eur=0.01).json()
    assert body["lane"] == "chat-paid"
    assert body["costEur"] == pytest.approx(1.8 * 1500 / 1_000_000)
    assert outcomes(body) == [("chat-free", "connection_error"), ("chat-paid", "ok")]
    # The request log's line (console.request_log) follows; the paid use is its own line.
    message = [record.getMessage() for record in caplog.records if record.name == "gateway_app.paid"][-1]
    assert message.startswith("paid lane chat-paid used: no zero-euro lane answered (chat-free connection_error); "
                              "worst case ")
    assert "within max_eur 0.01" in message
    assert "sk-paid-secret" not in caplog.text and "geöffnet" not in caplog.text  # no secret, no prompt


def test_a_hosted_lane_needs_its_key_and_gets_it_as_bearer(gateway, live, provider, lane_settings):
    hosted = provider("answer")
    load_lanes(chat_lane("chat-hosted", endpoint=hosted.url, eur=0, hosting="api"))
    body = ask(gateway).json()
    assert error_of_body(body)["details"]["attempts"][0]["outcome"] == "no_key"
    assert "GATEWAY_KEY_CHAT_HOSTED" in error_of_body(body)["details"]["attempts"][0]["detail"]
    lane_settings("chat-hosted", key="sk-hosted")
    assert ask(gateway).json()["lane"] == "chat-hosted"
    path, headers, sent = hosted.requests[0]
    assert headers["Authorization"] == "Bearer sk-hosted"
    assert sent["model"] == "test-model" and sent["stream"] is False and sent["max_tokens"] == 512
    assert sent["messages"] == [{"role": "user", "content": "Wann haben Sie geöffnet?"}]


def error_of_body(body):
    assert set(body) == {"error"}, body
    return body["error"]


def test_system_prompt_and_model_override_reach_the_provider(gateway, live, provider, lane_settings):
    fake = provider("answer")
    load_lanes(chat_lane("chat-local", endpoint=fake.url))
    lane_settings("chat-local", model="llama3.1:70b")
    ask(gateway, system="Antworte kurz.")
    sent = fake.requests[0][2]
    assert sent["model"] == "llama3.1:70b"
    assert sent["messages"][0] == {"role": "system", "content": "Antworte kurz."}


def test_an_endpoint_from_the_environment_replaces_the_registry_one(gateway, live, provider, lane_settings):
    fake = provider("answer", text="Über die Umgebung")
    load_lanes(chat_lane("chat-bridged", endpoint="bridge:elsewhere"))
    assert ask(gateway).json()["error"]["details"]["attempts"][0]["outcome"] == "unavailable"
    lane_settings("chat-bridged", endpoint=fake.url)
    assert ask(gateway).json()["text"] == "Über die Umgebung"


def test_an_answer_that_is_no_chat_completion_is_a_bad_response_without_cooldown(gateway, live, provider):
    garbage, good = provider("garbage"), provider("answer")
    load_lanes(chat_lane("chat-garbage", endpoint=garbage.url, priority=10),
               chat_lane("chat-good", endpoint=good.url, priority=20))
    assert outcomes(ask(gateway).json()) == [("chat-garbage", "bad_response"), ("chat-good", "ok")]
    assert not LaneCooldown.objects.exists()


def test_a_lane_of_unknown_price_is_never_used(gateway, live, provider, lane_settings):
    fake = provider("answer")
    load_lanes(chat_lane("chat-unknown", endpoint=fake.url, eur=None))
    lane_settings("chat-unknown", key="sk")
    response = ask(gateway, max_eur=100)
    assert error_of(response)["details"]["attempts"][0]["outcome"] == "price_unknown"
    assert fake.requests == []


def test_the_request_deadline_bounds_all_attempts_together(gateway, live, provider, settings):
    settings.GATEWAY_TIMEOUT_SEC = 0.3
    settings.GATEWAY_DEADLINE_SEC = 0.3
    first, second = provider("slow"), provider("answer")
    load_lanes(chat_lane("chat-slow", endpoint=first.url, priority=10),
               chat_lane("chat-later", endpoint=second.url, priority=20))
    error = error_of(ask(gateway))
    assert [a["outcome"] for a in error["details"]["attempts"]] == ["timeout", "deadline"]
    assert second.requests == []


def test_ollamas_own_dialect_for_an_api_chat_endpoint(gateway, live, provider):
    fake = provider("answer")
    fake.chat_body = lambda: b'{"message": {"role": "assistant", "content": "Hallo aus Ollama"}, ' \
                             b'"prompt_eval_count": 20, "eval_count": 4}'
    load_lanes(chat_lane("chat-llama", endpoint=fake.url.replace("/v1/chat/completions", "/api/chat")))
    body = ask(gateway).json()
    assert body["text"] == "Hallo aus Ollama"
    path, _, sent = fake.requests[0]
    assert path == "/api/chat" and sent["options"] == {"num_predict": 512} and "max_tokens" not in sent


def test_mock_mode_simulates_unconfigured_lanes_and_spends_nothing(gateway, provider, lane_settings):
    fake = provider("answer")
    load_lanes(chat_lane("chat-local", endpoint=fake.url, priority=10))
    body = ask(gateway).json()
    assert (body["lane"], body["mode"], body["costEur"]) == ("chat-local", "mock", 0)
    assert body["text"].startswith("Die Praxis ist Montag bis Freitag")
    assert fake.requests == []  # nothing left the process
    lane_settings("chat-local", mode="api")  # a lane configured on its own is called even in mock mode
    assert ask(gateway).json()["mode"] == "api" and len(fake.requests) == 1


def test_without_a_registry_the_gateways_own_mock_lane_answers(gateway):
    body = ask(gateway, prompt="ping").json()
    assert (body["text"], body["lane"], body["mode"]) == ("pong", "chat-gateway-mock", "mock")
    assert outcomes(body) == [("chat-gateway-mock", "ok")]
    response = ask(gateway, prompt="def f():", capability="code")
    assert response.status_code == 503 and error_of(response)["code"] == "no_lane_answered"


def test_the_shipped_registry_answers_german_and_english_from_the_mock_rule_set(gateway):
    from registry_app.demo import seed
    seed(None)
    german = ask(gateway).json()
    assert german["text"] == "Die Praxis ist Montag bis Freitag von 8 bis 18 Uhr geöffnet, samstags von 9 bis 13 Uhr."
    english = ask(gateway, prompt="When are you open on Saturday?").json()
    assert english["text"].startswith("The practice is open Monday to Friday")
    assert ask(gateway).json()["text"] == german["text"]  # deterministic


@pytest.mark.parametrize("body, field", [
    ({}, "prompt"), ({"prompt": 42}, "prompt"), ({"prompt": "   "}, "prompt"), ({"prompt": "x" * 20_001}, "prompt"),
    ({"prompt": "Hallo", "capability": "vision"}, "capability"), ({"prompt": "Hallo", "language": "Deutsch"}, "language"),
    ({"prompt": "Hallo", "max_eur": -1}, "max_eur"), ({"prompt": "Hallo", "max_eur": "1"}, "max_eur"),
    ({"prompt": "Hallo", "max_eur": True}, "max_eur"), ({"prompt": "Hallo", "max_eur": 101}, "max_eur"),
    ({"prompt": "Hallo", "system": ["a"]}, "system"),
])
def test_bad_bodies_are_field_errors(gateway, body, field):
    response = gateway.post("/v1/agent", body, format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "validation_error" and field in error["details"]


def test_the_body_is_json_whatever_its_content_type_and_bounded(gateway):
    # `curl -d '{"prompt": …}'` labels the body as a form.
    curl = gateway.post("/v1/agent", data='{"prompt": "ping"}', content_type="application/x-www-form-urlencoded")
    assert curl.status_code == 200 and curl.json()["text"] == "pong"
    broken = gateway.post("/v1/agent", data=b'{"prompt": ', content_type="application/json")
    assert broken.status_code == 400 and error_of(broken)["code"] == "malformed_json"
    form = gateway.post("/v1/agent", data="prompt=Hallo", content_type="application/x-www-form-urlencoded")
    assert form.status_code == 400 and error_of(form)["code"] == "malformed_json"
    huge = gateway.post("/v1/agent", data=b'{"prompt": "' + b"a" * 300_000 + b'"}', content_type="application/json")
    assert huge.status_code == 413 and error_of(huge)["code"] == "payload_too_large"
    listing = gateway.post("/v1/agent", ["Hallo"], format="json")
    assert listing.status_code == 400 and error_of(listing)["code"] == "validation_error"
    assert gateway.get("/v1/agent").status_code == 405
