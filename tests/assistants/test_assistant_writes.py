"""Assistants as a full resource: POST, PATCH and DELETE beside the reads, every field
checked (the same checks for the admin's editor), errors naming the field by its path,
numbers keeping their assistant."""
import pytest

from console.assistants.models import Assistant
from console.numbers.models import PhoneNumber
from console.numbers.services import number_create
from tests.conftest import error_of
from tools_app.models import HttpTool

pytestmark = pytest.mark.django_db

URL = "/v2/assistants"
FULL = {
    "name": "Empfang", "description": "Die Rezeption", "language": "de", "voice": "de+f3",
    "instructions": "Sie sind die freundliche Telefonassistenz der Praxis Sonnenschein. Antworten Sie kurz.",
    "openingTouchpoint": "inbound.after_hours",
    "tools": ["create_callback", "transfer_call", "end_call", "create_callback"],
    "knowledge": ["kd_01jd0000000000000000000000"],
    "model": {"capability": "chat", "temperature": 0.35, "maxTokens": 300},
    "transferTargets": [{"name": "Zentrale", "e164": "030 901820"}],
    "analysis": {"summary": True, "successCriteria": "Ein Rückruf wurde vereinbart.",
                 "schema": {"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}},
    "maxDurationSec": 300, "silenceTimeoutSec": 20, "endCallPhrases": ["Auf Wiederhören", " Tschüss "],
}


def post(api, body):
    return api.post(URL, body, format="json")


def details_of(response):
    assert response.status_code == 400, response.content
    return error_of(response)["details"]


def test_a_created_assistant_has_every_field_as_sent_normalised(api_a):
    response = post(api_a, FULL)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"].startswith("as_")
    assert body["tools"] == ["create_callback", "transfer_call", "end_call"]  # once each, in order
    assert body["transferTargets"] == [{"name": "Zentrale", "e164": "+4930901820"}]
    assert body["model"] == {"capability": "chat", "lane": None, "temperature": 0.35, "maxTokens": 300}
    assert body["analysis"]["schema"]["required"] == ["reason"] and body["analysis"]["summary"] is True
    assert body["endCallPhrases"] == ["Auf Wiederhören", "Tschüss"]
    assert body["openingTouchpoint"] == "inbound.after_hours" and body["knowledge"] == FULL["knowledge"]
    assert api_a.get(f"{URL}/{body['id']}").json() == body
    assert api_a.get(URL).json()["assistants"] == [body]


def test_the_defaults_of_a_name_alone(api_a):
    body = post(api_a, {"name": "Kurz"}).json()
    assert body["openingTouchpoint"] == "inbound.greeting" and body["language"] == "de"
    assert body["knowledge"] is None  # all of the tenant's documents
    assert body["tools"] == [] and body["transferTargets"] == [] and body["endCallPhrases"] == []
    assert body["model"] == {"capability": "chat", "lane": None, "temperature": None, "maxTokens": None}
    assert body["analysis"] == {"summary": True, "schema": None, "successCriteria": ""}
    assert body["maxDurationSec"] is None and body["silenceTimeoutSec"] is None


@pytest.mark.parametrize(("change", "path", "words"), [
    ({"transferTargets": [{"name": "x", "e164": "12"}]}, "transferTargets[0].e164", "phone number"),
    ({"transferTargets": [{"e164": "+4930901820"}]}, "transferTargets[0].name", "required"),
    ({"transferTargets": [{"name": "a", "e164": "+4930901820"}, {"name": "b", "e164": "030 901820"}]},
     "transferTargets[1].e164", "twice"),
    ({"analysis": {"schema": {"type": "no-such-type"}}}, "analysis.schema", "Draft 2020-12"),
    ({"analysis": {"schema": {"type": "string"}}}, "analysis.schema", "\"object\""),
    ({"analysis": {"schema": {"type": "object", "$ref": "https://example.com/s.json"}}}, "analysis.schema",
     "other documents"),
    ({"analysis": {"summary": "yes"}}, "analysis.summary", "true or false"),
    ({"analysis": {"extra": 1}}, "analysis.extra", "Unknown field"),
    ({"instructions": "x" * 20_001}, "instructions", "20,000"),
    ({"openingTouchpoint": "inbound.nope"}, "openingTouchpoint", "inbound.greeting"),
    ({"openingTouchpoint": "call.hold"}, "openingTouchpoint", "does not open a call"),
    ({"tools": ["send_email"]}, "tools[0]", "create_callback, lookup_knowledge, transfer_call, end_call, opt_out"),
    ({"tools": ["tl_01jd0000000000000000000000"]}, "tools", "No HTTP tool"),
    ({"knowledge": "all"}, "knowledge", "null for all"),
    ({"model": {"temperature": 2.5}}, "model.temperature", "0 to 2"),
    ({"model": {"capability": "stt"}}, "model.capability", "chat"),
    ({"model": {"maxTokens": 0}}, "model.maxTokens", "whole number"),
    ({"model": {"lane": "chat-nowhere"}}, "model.lane", "registry"),
    ({"maxDurationSec": 601}, "maxDurationSec", "maximum call length"),
    ({"silenceTimeoutSec": 1}, "silenceTimeoutSec", "2 to 600"),
    ({"endCallPhrases": [""]}, "endCallPhrases[0]", "blank"),
    ({"language": "Deutsch"}, "language", "de, en"),
    ({"colour": "blue"}, "colour", "Unknown field"),
])
def test_every_problem_is_a_400_naming_its_field(api_a, change, path, words):
    details = details_of(post(api_a, {"name": "Probe", **change}))
    assert path in details, details
    assert words in " ".join(details[path])
    assert not Assistant.objects.exists()


def test_all_problems_are_named_at_once(api_a):
    details = details_of(post(api_a, {"instructions": 5, "transferTargets": [{"name": "x", "e164": "12"}]}))
    assert {"name", "instructions", "transferTargets[0].e164"} <= set(details)


def test_the_maximum_duration_follows_the_tenants_call_length(api_a, tenant_a):
    tenant_a.max_call_minutes = 20
    tenant_a.save(update_fields=["max_call_minutes"])
    assert post(api_a, {"name": "Lang", "maxDurationSec": 1200}).status_code == 201


def test_a_patch_changes_only_what_it_names_and_merges_model_and_analysis(api_a):
    created = post(api_a, FULL).json()
    response = api_a.patch(f"{URL}/{created['id']}", {"instructions": "Sie sind die Assistenz der Praxis Probe.",
                                                      "model": {"temperature": None},
                                                      "analysis": {"summary": False}}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["instructions"] == "Sie sind die Assistenz der Praxis Probe."
    assert body["model"] == {"capability": "chat", "lane": None, "temperature": None, "maxTokens": 300}
    assert body["analysis"]["summary"] is False and body["analysis"]["schema"] == FULL["analysis"]["schema"]
    assert body["transferTargets"] == created["transferTargets"] and body["tools"] == created["tools"]
    assert body["updatedAt"] >= created["updatedAt"]


def test_a_patch_is_checked_like_a_create(api_a):
    created = post(api_a, {"name": "Probe"}).json()
    response = api_a.patch(f"{URL}/{created['id']}", {"transferTargets": [{"name": "x", "e164": "12"}]},
                           format="json")
    assert "transferTargets[0].e164" in details_of(response)
    assert "non_field_errors" in details_of(api_a.patch(f"{URL}/{created['id']}", {}, format="json"))
    assert api_a.get(f"{URL}/{created['id']}").json()["transferTargets"] == []


def test_deleting_an_assistant_that_numbers_use_is_a_409_naming_them(api_a, tenant_a):
    assistant = post(api_a, {"name": "Probe"}).json()
    number = number_create(tenant=tenant_a, e164="+4930555000222", assistant_id=assistant["id"])

    response = api_a.delete(f"{URL}/{assistant['id']}")

    assert response.status_code == 409
    error = error_of(response)
    assert error["code"] == "assistant_in_use"
    assert error["details"]["numbers"] == [{"id": number.pk, "e164": "+4930555000222"}]
    assert PhoneNumber.objects.get(pk=number.pk).assistant_id == assistant["id"]

    api_a.patch(f"/v2/numbers/{number.pk}", {"assistant": None}, format="json")
    assert api_a.delete(f"{URL}/{assistant['id']}").status_code == 204
    assert api_a.get(f"{URL}/{assistant['id']}").status_code == 404


def test_another_tenants_http_tool_is_no_tool_here(api_a, tenant_b):
    foreign = HttpTool.objects.create(tenant=tenant_b, name="fremd", url="https://globex.example/t", secret_nonce="n")
    details = details_of(post(api_a, {"name": "Probe", "tools": [foreign.pk]}))
    assert details["tools"] == [f"No HTTP tool '{foreign.pk}' in this tenant (GET /v2/tools lists them)."]


def test_a_tool_of_the_tenant_and_a_registry_lane_are_accepted(api_a, tenant_a, registry_loaded):
    tool = HttpTool.objects.create(tenant=tenant_a, name="termin", url="https://acme.example/t", secret_nonce="n")
    lane = registry_loaded
    body = post(api_a, {"name": "Probe", "tools": ["end_call", tool.pk], "model": {"lane": lane}}).json()
    assert body["tools"] == ["end_call", tool.pk] and body["model"]["lane"] == lane


def test_a_lane_that_is_not_for_chat_is_refused(api_a, registry_loaded):
    from registry_app import snapshot

    other = next(lane.id for lane in snapshot.current().lanes if lane.capability != "chat")
    assert "model.lane" in details_of(post(api_a, {"name": "Probe", "model": {"lane": other}}))


def test_writes_are_in_the_audit_trail(api_a, tenant_a):
    from console.audit.models import AuditEntry

    created = post(api_a, {"name": "Probe"}).json()
    api_a.patch(f"{URL}/{created['id']}", {"voice": "de+m3"}, format="json")
    api_a.delete(f"{URL}/{created['id']}")
    actions = list(AuditEntry.objects.filter(tenant=tenant_a).order_by("at", "id").values_list("action", flat=True))
    assert actions == ["POST /v2/assistants", "PATCH /v2/assistants/{pk}", "DELETE /v2/assistants/{pk}"]


def test_the_demo_assistants_are_what_the_api_accepts(db):
    from console.assistants.serializers import AssistantSerializer
    from console.assistants.validation import API_FIELDS, assistant_values
    from console.demo import seed_assistants_and_numbers, seed_tenant

    tenant = seed_tenant()
    seed_assistants_and_numbers(tenant)
    for assistant in Assistant.objects.for_tenant(tenant):
        shown = AssistantSerializer(assistant).data
        assistant_values(tenant=tenant, data={name: shown[name] for name in API_FIELDS})  # raises if not
    assert "create_callback" in Assistant.objects.get(tenant=tenant, name="Empfang").tools


def test_a_tenants_deletion_still_takes_its_assistants_and_numbers(tenant_a):
    assistant = Assistant.objects.create(tenant=tenant_a, name="Empfang")
    number_create(tenant=tenant_a, e164="+4930555000222", assistant_id=assistant.pk)
    tenant_a.delete()
    assert not Assistant.objects.exists() and not PhoneNumber.objects.exists()
