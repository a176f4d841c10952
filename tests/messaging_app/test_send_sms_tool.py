"""The built-in tool `send_sms`, declared by messaging_app (console.assistants.builtin_tools)
and run by tools_app's one entry point as the model calls it: to the caller's own number,
once per call and template, refused as a tool error the model is told in German; offered
unless the tenant chose no SMS, its templates shown as an enum."""
import pytest

from console.assistants.models import Assistant
from messaging_app.models import Sms
from tests.messaging_app.conftest import MOBILE, WHEN, call_from
from tools_app.definitions import tool_definitions
from tools_app.services import tool_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def assistant(tenant_a):
    return Assistant.objects.create(tenant=tenant_a, name="Empfang", tools=["send_sms"])


def definition(assistant):
    return next((tool["function"] for tool in tool_definitions(assistant=assistant)
                 if tool["function"]["name"] == "send_sms"), None)


def test_it_is_offered_with_a_provider_and_the_tenants_templates(assistant, api_a):
    assert definition(assistant) is not None  # the default: each call's own carrier
    api_a.patch("/v2/messaging", {"provider": ""}, format="json")
    assert definition(assistant) is None  # no SMS chosen: not offered
    api_a.patch("/v2/messaging", {"provider": "webhook", "webhookUrl": "https://sms.acme.example/send",
                                  "templates": {"anfahrt": "So finden Sie uns: {weg}"}}, format="json")
    shown = definition(assistant)
    assert shown["parameters"]["properties"]["template"]["enum"] == ["anfahrt", "confirmation", "reminder"]


def test_the_model_sends_the_caller_an_sms_once(assistant, tenant_a, sipgate, django_capture_on_commit_callbacks):
    call = call_from(tenant_a)
    for _ in range(2):  # the model calls it twice: one SMS
        with django_capture_on_commit_callbacks(execute=True):
            answer = tool_run(assistant=assistant, call_id=call.pk, name="send_sms",
                              arguments={"template": "confirmation", "variables": WHEN})
        assert answer["ok"] is True and answer["result"]["status"] in ("queued", "sent"), answer
    assert [request["body"]["recipient"] for request in sipgate.requests] == [MOBILE]
    assert Sms.objects.get().call_id == call.pk


def test_a_landline_is_a_tool_error_told_in_german(assistant, tenant_a, sipgate):
    call = call_from(tenant_a, "+49301234567")
    answer = tool_run(assistant=assistant, call_id=call.pk, name="send_sms", arguments={"template": "confirmation",
                                                                                      "variables": WHEN})
    assert (answer["ok"], answer["error"]) == (False, "sms_refused") and "Mobilnummer" in answer["message"]
    mobile = call_from(tenant_a)
    missing = tool_run(assistant=assistant, call_id=mobile.pk, name="send_sms", arguments={"template": "confirmation"})
    assert (missing["ok"], missing["error"]) == (False, "invalid_arguments")  # the template's date and time
    assert sipgate.requests == [] and not Sms.objects.exists()
