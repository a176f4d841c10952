"""The admin says when an assistant is answered by the offline rule set (the mock lane's
dialogue policy): its instructions change nothing until a language model answers. The
banner is on the assistant's page and on the dashboard, and goes once a chat lane the
gateway can call (an API) answers; the lane field is a dropdown of those lanes."""
import pytest
from django.test import Client

from console.assistants.models import Assistant
from registry_app import snapshot
from tests.gateway_app.conftest import chat_lane, load_lanes

pytestmark = pytest.mark.django_db
BANNER = "Offline-Regelwerk: Ihre Anweisungen wirken erst mit einem Sprachmodell"


@pytest.fixture
def assistant(tenant_a, settings):
    snapshot.invalidate()
    settings.GATEWAY_MODE = "mock"
    settings.GATEWAY_LANE_SETTINGS = {}
    yield Assistant.objects.create(tenant=tenant_a, name="Empfang", instructions="Sie sind die Praxis Weber.")
    snapshot.invalidate()


def _pages(owner, assistant):
    client = Client(HTTP_ACCEPT_LANGUAGE="de")
    client.force_login(owner)
    return (client.get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode(),
            client.get("/admin/").content.decode())


def test_the_offline_rule_set_is_announced_on_the_assistant_and_the_dashboard(owner, assistant):
    load_lanes(chat_lane("chat-mock-only"))  # GATEWAY_MODE mock: the rule set answers
    page, dashboard = _pages(owner, assistant)
    assert BANNER in page and BANNER in dashboard
    assert "Rückrufwünsche" in page and "bucht, verschiebt und storniert Termine" in page  # what the rules can do
    # The lane is picked from the registry's callable chat lanes, not typed.
    assert '<select name="model_lane"' in page and 'value="chat-mock-only"' in page
    # Its connection as the gateway's readiness sees it.
    assert "chat-mock-only (Offline-Regelwerk): bereit" in page


def test_a_language_model_answering_removes_the_banner(owner, assistant, settings):
    load_lanes(chat_lane("chat-remote", endpoint="https://llm.example/v1/chat/completions"))
    settings.GATEWAY_MODE = "api"
    page, dashboard = _pages(owner, assistant)
    assert BANNER not in page and BANNER not in dashboard
    assert "chat-remote (API): bereit" in page
    # The assistant names the rule set's lane itself: the banner again.
    load_lanes(chat_lane("chat-remote", endpoint="https://llm.example/v1/chat/completions"),
               {**chat_lane("chat-offline"), "params": {"model": "mock", "streaming": False, "languages": ["de"]}})
    assistant.model_lane = "chat-offline"
    assistant.save(update_fields=["model_lane"])
    page, _ = _pages(owner, assistant)
    assert BANNER in page
