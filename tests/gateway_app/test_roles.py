"""The cloud agent: each role's lane choice on the example registry of the spec and on
the registry the project ships, the hosted fallback, and unknown roles."""
import json
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from registry_app.demo import SHIPPED_DOCUMENT
from tests.conftest import error_of
from tests.gateway_app.conftest import chat_lane, load_document, load_lanes

# The spec's example registry when the checkout sits beside shared/ (as in CI), else
# the copy kept with the tests, so that the suite stands on its own in any clone.
SHARED_EXAMPLE = Path(django_settings.BASE_DIR).parent / "shared" / "data" / "hub-registry.example.json"
EXAMPLE = SHARED_EXAMPLE if SHARED_EXAMPLE.exists() else Path(__file__).parent / "data" / "hub-registry.example.json"
DOCUMENTS = {"example": EXAMPLE, "shipped": SHIPPED_DOCUMENT}

# In mock mode every lane answers from the rule set, so the lane that answers is the
# lane each role's limits choose. On both documents: the trainee gets the fast mock
# lane (the local Llama is medium), the junior the local Llama (zero-euro, priority
# 30), the senior the paid Mistral (the only high lane, within 2 cents), and the
# experte finds no usable frontier lane (Claude is session-gated, GPT key-missing) and
# falls back to the hosted chat provider, Mistral.
EXPECTED = {"trainee": ("chat-gateway-mock", False), "junior": ("chat-llama-local", False),
            "senior": ("chat-mistral-api", False), "experte": ("chat-mistral-api", True)}


def ask(gateway, role, prompt="Fasse den Anruf zusammen."):
    return gateway.post("/agent", {"role": role, "prompt": prompt}, format="json")


@pytest.mark.parametrize("document", DOCUMENTS)
@pytest.mark.parametrize("role", EXPECTED)
def test_each_roles_lane_choice(gateway, document, role):
    load_document(json.loads(DOCUMENTS[document].read_text(encoding="utf-8")))
    response = ask(gateway, role)
    assert response.status_code == 200
    body = response.json()
    assert (body["lane"], body["fallback"]) == EXPECTED[role]
    assert body["role"] == role and body["mode"] == "mock"
    assert body["text"].startswith("Zusammenfassung:")
    assert body["costEur"] == 0  # simulated: nothing spent


def test_the_example_registry_is_there():
    assert json.loads(EXAMPLE.read_text(encoding="utf-8"))["models"], f"expected the example registry at {EXAMPLE}"


def test_a_trainee_never_reaches_a_paid_lane_but_a_senior_does(gateway):
    load_lanes(chat_lane("chat-paid-fast", endpoint="https://paid.example/v1", eur=1.0, quality="high"))
    trainee = ask(gateway, "trainee")
    # The ceiling alone stands in the way: refused as over budget, not "try again later".
    assert trainee.status_code == 422
    error = error_of(trainee)
    assert (error["code"], error["details"]["maxEur"], error["details"]["lane"]) == ("over_budget", 0,
                                                                                     "chat-paid-fast")
    assert [(a["lane"], a["outcome"]) for a in error["details"]["attempts"]] == [("chat-paid-fast", "over_budget")]
    assert ask(gateway, "senior").json()["lane"] == "chat-paid-fast"


def test_the_hosted_fallback_comes_after_the_roles_own_lanes(gateway, settings, provider, lane_settings):
    settings.GATEWAY_MODE = "live"
    own, hosted = provider("fail"), provider("answer", text="Vom Anbieter")
    load_lanes(chat_lane("chat-frontier-local", endpoint=own.url, quality="frontier"),
               chat_lane("chat-hosted-mid", endpoint=hosted.url, eur=0.5, quality="mid", latency="slow"))
    lane_settings("chat-hosted-mid", key="sk-hosted")
    body = ask(gateway, "experte").json()
    assert (body["lane"], body["fallback"], body["text"]) == ("chat-hosted-mid", True, "Vom Anbieter")
    assert [(a["lane"], a["outcome"]) for a in body["attempts"]] == [
        ("chat-frontier-local", "server_error"), ("chat-hosted-mid", "ok")]


def test_without_a_registry_the_mock_lane_answers_every_role(gateway):
    for role in EXPECTED:
        body = ask(gateway, role).json()
        assert (body["lane"], body["fallback"]) == ("chat-gateway-mock", False)


@pytest.mark.parametrize("role", ["chef", "", "Experte", None, 3])
def test_an_unknown_role_is_400_listing_the_roles(gateway, role):
    response = ask(gateway, role)
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "unknown_role"
    assert error["details"]["roles"] == ["trainee", "junior", "senior", "experte"]
    assert "trainee, junior, senior, experte" in error["message"]


def test_a_role_without_prompt_is_a_field_error(gateway):
    response = gateway.post("/agent", {"role": "junior"}, format="json")
    assert response.status_code == 400 and "prompt" in error_of(response)["details"]
