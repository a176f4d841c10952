"""The admin's "Testfälle" and "Testläufe" (issue 38 §2): a test case is written with the
API's fields and checks, run from the list, its run's results read in German; the
assistant's "Veröffentlichen" is refused while a test case fails, unless ticked."""
import json

import pytest
from django.test import Client

from agent_app.models import Scenario, ScenarioRun
from console.assistants.models import Assistant, AssistantVersion

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(owner):
    found = Client()
    found.force_login(owner)
    return found


@pytest.fixture
def assistant(tenant_a, mock_gateway):
    return Assistant.objects.create(tenant=tenant_a, name="Empfang", tools=["create_callback"])


def _form(assistant, **changes):
    return {"tenant": assistant.tenant_id, "assistant": assistant.pk, "name": "Rückruf",
            "turns": json.dumps([{"text": "Ich hätte gern einen Rückruf."}]),
            "expectations": json.dumps([{"type": "said", "text": "zurück"}]), "variables": "{}",
            "tool_stubs": "{}", **changes}


def test_a_test_case_is_written_checked_and_run_in_german(client, assistant, django_capture_on_commit_callbacks):
    page = client.get("/admin/agent_app/scenario/add/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Äußerungen des Anrufers" in page and "Erwartungen am Ende" in page
    refused = client.post("/admin/agent_app/scenario/add/", _form(
        assistant, expectations=json.dumps([{"type": "said", "pattern": "(?=x)"}])), HTTP_ACCEPT_LANGUAGE="de")
    assert refused.status_code == 200 and "RE2" in refused.content.decode()
    assert not Scenario.objects.exists()
    assert client.post("/admin/agent_app/scenario/add/", _form(assistant)).status_code == 302
    scenario = Scenario.objects.get()
    assert scenario.turns == [{"text": "Ich hätte gern einen Rückruf.", "expectations": []}]
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/admin/agent_app/scenario/", {"action": "run_text", "_selected_action": [scenario.pk]},
                    HTTP_ACCEPT_LANGUAGE="de")
    run = ScenarioRun.objects.get()
    assert run.status == "passed" and run.trigger == "admin"
    page = client.get(f"/admin/agent_app/scenariorun/{run.pk}/change/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Rückruf — Bestanden" in page and "Anrufer" in page


def test_the_admins_publish_is_refused_while_a_test_case_fails_unless_ticked(client, assistant):
    Scenario.objects.create(tenant=assistant.tenant, assistant=assistant, name="Quitten",
                            turns=[{"text": "Hallo", "expectations": []}],
                            expectations=[{"type": "said", "text": "Quittengelee"}])
    url = f"/admin/assistants/assistant/{assistant.pk}/publish/"
    page = client.post(url, {"version_note": "Neu"}, HTTP_ACCEPT_LANGUAGE="de", follow=True).content.decode()
    assert "Nicht veröffentlicht" in page and "Quitten" in page
    assert not AssistantVersion.objects.exists()
    client.post(url, {"version_note": "Neu", "version_force": "1"}, HTTP_ACCEPT_LANGUAGE="de")
    assert "trotz fehlgeschlagener Testfälle: Quitten" in AssistantVersion.objects.get().note
