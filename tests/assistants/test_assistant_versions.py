"""An assistant's versions: the draft (what PATCH and the admin edit) is published as
v1, v2, … (immutable snapshots of every behaviour field), a version is restored into
the draft, the history shows what each version changed; numbers, campaigns and the
browser's sessions answer with the pinned or latest published version while the draft
changes, and a call records the version it ran with. Other tenants' assistants and
versions are 404."""
import importlib
import secrets

import pytest

from agent_app import session as core
from agent_app.models import AgentSession
from agent_app.services import agent_session_claim, phone_call_register
from agent_app.session import CallContext
from calls_app.analysis import call_analyze
from calls_app.models import Call
from calls_app.phone_calls import number_route
from calls_app.services import call_web_end, carrier_create
from console.assistants.models import Assistant, AssistantVersion
from console.assistants.selectors import PARTS, UNVERSIONED, assistant_answering, assistant_snapshot
from console.credentials.models import ApiKey
from tests.conftest import error_of

pytestmark = pytest.mark.django_db
CALLER, CALLED = "+4917612345678", "+493055500123"
OLD, NEW = "Sie sind die Assistenz der Praxis Alt.", "Sie sind die Assistenz der Praxis Neu."


@pytest.fixture
def assistant(tenant_a):
    return Assistant.objects.create(tenant=tenant_a, name="Empfang", instructions=OLD, tools=["end_call"])


def _url(assistant, rest=""):
    return f"/v2/assistants/{assistant.pk}{rest}"


def _publish(api, assistant, note=""):
    response = api.post(_url(assistant, "/publish"), {"note": note} if note else {}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _patch(api, assistant, body):
    response = api.patch(_url(assistant), body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


# --- Publishing, the history and its diffs -------------------------------------------------

def test_publish_numbers_the_versions_and_says_who_when_and_why(api_a, assistant):
    first = _publish(api_a, assistant, note="Start")
    _patch(api_a, assistant, {"instructions": NEW})
    second = _publish(api_a, assistant)
    assert (first["version"], first["label"], first["note"]) == (1, "v1", "Start")
    assert (second["version"], second["label"], second["note"]) == (2, "v2", "")
    assert second["publishedBy"] == f"key:{ApiKey.objects.get(tenant=assistant.tenant).prefix}"
    assert second["publishedAt"].endswith("Z")
    history = api_a.get(_url(assistant, "/versions")).json()
    assert [v["version"] for v in history["versions"]] == [2, 1] and history["live"] == 2
    assert [v["live"] for v in history["versions"]] == [True, False]
    assert history["versions"][1]["assistant"]["instructions"] == OLD  # v1 is kept as it was
    assert history["draftChanges"] == []


def test_a_publish_body_takes_a_note_and_force_only(api_a, assistant):
    # `force` publishes although a test case fails (tests/agent_app/test_scenarios.py); anything else is refused.
    response = api_a.post(_url(assistant, "/publish"), {"forced": True}, format="json")
    assert response.status_code == 400 and "forced" in error_of(response)["details"]
    response = api_a.post(_url(assistant, "/publish"), {"force": "vielleicht"}, format="json")
    assert response.status_code == 400 and "force" in error_of(response)["details"]
    assert not AssistantVersion.objects.exists()


def test_the_history_shows_what_each_version_changed_and_what_the_draft_changes(api_a, assistant):
    _publish(api_a, assistant)
    _patch(api_a, assistant, {"instructions": OLD + "\nAntworten Sie kurz.", "tools": ["end_call", "create_callback"],
                              "model": {"temperature": 0.3}})
    _publish(api_a, assistant)
    _patch(api_a, assistant, {"voice": "kerstin"})
    history = api_a.get(_url(assistant, "/versions")).json()
    changes = {change["field"]: change for change in history["versions"][0]["changes"]}
    assert set(changes) == {"instructions", "tools", "model.temperature"}
    assert changes["tools"] == {"field": "tools", "before": ["end_call"], "after": ["end_call", "create_callback"]}
    assert changes["model.temperature"]["before"] is None and changes["model.temperature"]["after"] == 0.3
    assert "+Antworten Sie kurz." in changes["instructions"]["diff"].splitlines()
    assert " " + OLD in changes["instructions"]["diff"].splitlines()  # the unchanged line as context
    assert history["draftChanges"] == [{"field": "voice", "before": "", "after": "kerstin"}]
    one = api_a.get(_url(assistant, "/versions/2"))
    assert one.status_code == 200 and one.json() == history["versions"][0]


def test_restore_copies_a_version_into_the_draft_and_publishes_nothing(api_a, assistant):
    original = api_a.get(_url(assistant)).json()
    _publish(api_a, assistant)
    _patch(api_a, assistant, {"instructions": NEW, "name": "Zentrale", "endCallPhrases": ["Tschüss"],
                              "analysis": {"summary": False}, "maxDurationSec": 120})
    restored = api_a.post(_url(assistant, "/versions/1/restore"))
    assert restored.status_code == 200, restored.content
    left_out = ("updatedAt",)
    assert {k: v for k, v in restored.json().items() if k not in left_out} == \
        {k: v for k, v in original.items() if k not in left_out}
    assert api_a.get(_url(assistant)).json()["instructions"] == OLD
    assert AssistantVersion.objects.filter(assistant=assistant).count() == 1


def test_a_version_naming_a_deleted_http_tool_is_not_restored_into_the_draft(api_a, assistant, tenant_a):
    from tools_app.services import http_tool_create, http_tool_delete

    tool, _ = http_tool_create(tenant=tenant_a, data={"name": "termin", "url": "https://tools.example/t"})
    _patch(api_a, assistant, {"tools": ["end_call", tool.pk]})
    _publish(api_a, assistant)
    _patch(api_a, assistant, {"tools": ["end_call"], "instructions": NEW})
    tool_id = tool.pk
    http_tool_delete(tool=tool)
    response = api_a.post(_url(assistant, "/versions/1/restore"))
    assert response.status_code == 400 and tool_id in str(error_of(response)["details"]["tools"])
    assert Assistant.objects.get(pk=assistant.pk).instructions == NEW  # the draft is as it was


def test_a_version_keeps_its_http_tools_definitions_as_they_were_published(api_a, assistant, tenant_a):
    from tools_app.definitions import tool_definitions
    from tools_app.services import http_tool_create, http_tool_update

    params = {"type": "object", "properties": {"datum": {"type": "string"}}}
    tool, _ = http_tool_create(tenant=tenant_a, data={"name": "termin", "url": "https://tools.example/t",
                                                      "description": "Bucht einen Termin.", "parameters": params})
    _patch(api_a, assistant, {"tools": [tool.pk]})
    _publish(api_a, assistant)
    http_tool_update(tool=tool, data={"name": "termin_neu", "description": "Anders.",
                                      "parameters": {"type": "object", "properties": {}}})

    def shown(config):
        return [(d["function"]["name"], d["function"]["description"], d["function"]["parameters"])
                for d in tool_definitions(assistant=config)]

    live = assistant_answering(assistant=Assistant.objects.get(pk=assistant.pk))
    assert live.version == 1 and shown(live) == [("termin", "Bucht einen Termin.", params)]
    draft = Assistant.objects.get(pk=assistant.pk)
    assert shown(draft) == [("termin_neu", "Anders.", {"type": "object", "properties": {}})]
    history = api_a.get(_url(assistant, "/versions")).json()
    assert history["versions"][0]["recorded"]["http_tools"][tool.pk]["name"] == "termin"
    change, = history["draftChanges"]  # publishing would record the tool as it is now
    assert change["field"] == "recorded.http_tools" and change["after"][tool.pk]["name"] == "termin_neu"


def test_a_version_holds_every_field_of_the_assistant_but_its_identity(tenant_a, assistant):
    """The snapshot's fields are derived from the model: a field added later is versioned
    without anyone listing it."""
    fields = {field.attname for field in Assistant._meta.concrete_fields if field.name not in UNVERSIONED}
    assert set(assistant_snapshot(assistant)) == fields | {PARTS}
    assert {"instructions", "tools", "knowledge", "model_lane", "voice", "analysis_schema",
            "transfer_targets", "end_call_phrases"} <= fields


def test_every_api_field_of_a_version_comes_back_after_the_draft_changed(api_a, assistant):
    before = api_a.get(_url(assistant)).json()
    _publish(api_a, assistant)
    _patch(api_a, assistant, {"description": "x", "language": "en", "voice": "kerstin", "instructions": NEW,
                              "tools": [], "knowledge": [], "transferTargets": [{"name": "Z", "e164": "+4930901820"}],
                              "analysis": {"successCriteria": "Termin"}, "silenceTimeoutSec": 30})
    shown = api_a.get(_url(assistant, "/versions/1")).json()["assistant"]
    assert shown == {k: v for k, v in before.items() if k not in ("id", "createdAt", "updatedAt")}


# --- Isolation and errors --------------------------------------------------------------------

def test_other_tenants_assistants_and_versions_are_404(api_a, api_b, assistant):
    _publish(api_a, assistant)
    for method, rest in (("post", "/publish"), ("get", "/versions"), ("get", "/versions/1"),
                         ("post", "/versions/1/restore")):
        response = getattr(api_b, method)(_url(assistant, rest), format="json")
        assert response.status_code == 404 and error_of(response)["code"] == "not_found", rest
    assert AssistantVersion.objects.filter(assistant=assistant).count() == 1


def test_an_unknown_version_is_404_unknown_version(api_a, assistant):
    _publish(api_a, assistant)
    for method, rest in (("get", "/versions/2"), ("post", "/versions/7/restore")):
        response = getattr(api_a, method)(_url(assistant, rest))
        assert response.status_code == 404 and error_of(response)["code"] == "unknown_version"


# --- What answers: numbers, pins, sessions; the call's version ----------------------------------

@pytest.fixture
def carrier(tenant_a):
    tenant_a.minute_cap = 1000  # room for a call per version
    tenant_a.save(update_fields=["minute_cap"])
    return carrier_create(carrier_id="tw1", kind="twilio",
                          credentials={"account_sid": "AC" + "0" * 32, "auth_token": "token"})[0]


def _phone_call(carrier, call_sid):
    """A phone call to CALLED on the browser's conversation core: the call as recorded,
    and the system prompt its mind begins with."""
    call, token = phone_call_register(carrier=carrier, number=number_route(e164=CALLED), carrier_call_id=call_sid,
                                      from_e164=CALLER, to_e164=CALLED, transport="twilio")
    session = agent_session_claim(token=token, transport="twilio", carrier_id="tw1", carrier_call_id=call_sid)
    assert session is not None
    prompt = core._mind_for(CallContext.of_agent_session(session)).messages[0]["content"]
    return Call.objects.get(pk=call.pk), prompt


def test_a_number_answers_with_the_published_version_while_the_draft_changes(api_a, assistant, carrier):
    _publish(api_a, assistant)
    response = api_a.post("/v2/numbers", {"e164": CALLED, "assistant": assistant.pk}, format="json")
    assert response.status_code == 201 and response.json()["assistantVersion"] is None
    _patch(api_a, assistant, {"instructions": NEW})
    call, prompt = _phone_call(carrier, "CA1")
    assert prompt.startswith(OLD) and call.assistant_version == 1
    _publish(api_a, assistant)  # only now do callers meet the change
    call, prompt = _phone_call(carrier, "CA2")
    assert prompt.startswith(NEW) and call.assistant_version == 2
    number = response.json()["id"]
    pinned = api_a.patch(f"/v2/numbers/{number}", {"assistantVersion": 1}, format="json")
    assert pinned.status_code == 200 and pinned.json()["assistantVersion"] == 1
    call, prompt = _phone_call(carrier, "CA3")
    assert prompt.startswith(OLD) and call.assistant_version == 1
    listed = api_a.get(f"/v2/calls/{call.pk}").json()
    assert listed["assistant_version"] == 1


def test_a_number_pins_only_a_version_its_assistant_has(api_a, assistant):
    response = api_a.post("/v2/numbers", {"e164": CALLED, "assistant": assistant.pk, "assistantVersion": 1},
                          format="json")
    assert response.status_code == 400 and "assistantVersion" in error_of(response)["details"]
    _publish(api_a, assistant)
    number = api_a.post("/v2/numbers", {"e164": CALLED, "assistant": assistant.pk, "assistantVersion": 1},
                        format="json").json()
    other = Assistant.objects.create(tenant=assistant.tenant, name="Andere")
    moved = api_a.patch(f"/v2/numbers/{number['id']}", {"assistant": other.pk}, format="json").json()
    assert moved["assistantVersion"] is None  # a new assistant clears the pin


def test_an_assistant_never_published_answers_with_its_draft(api_a, assistant, carrier):
    api_a.post("/v2/numbers", {"e164": CALLED, "assistant": assistant.pk}, format="json")
    _patch(api_a, assistant, {"instructions": NEW})
    call, prompt = _phone_call(carrier, "CA1")
    assert prompt.startswith(NEW) and call.assistant_version is None


def test_a_browser_session_answers_with_the_published_version_and_the_analysis_says_which(api_a, assistant):
    _publish(api_a, assistant)
    _patch(api_a, assistant, {"instructions": NEW, "analysis": {"summary": False}, "voice": "kerstin",
                              "language": "en"})
    response = api_a.post("/api/voice/agent/sessions", {"assistant": assistant.pk}, format="json")
    assert response.status_code == 201, response.content
    session = AgentSession.objects.select_related("tenant", "call").get()
    assert session.call.assistant_version == 1
    assert (session.voice, session.language) == ("", "de")  # v1's voice and language, not the draft's
    prompt = core._mind_for(CallContext.of_agent_session(session)).messages[0]["content"]
    assert prompt.startswith(OLD)
    call_web_end(call_id=session.call_id)
    analysis = call_analyze(call_id=session.call_id)
    assert analysis is not None
    details = api_a.get(f"/v2/calls/{session.call_id}").json()
    assert details["analysis"]["assistant_version"] == 1
    assert details["analysis"]["summary"] != ""  # v1 asks for a summary; the draft no longer does


def test_an_outbound_call_talks_with_the_calling_numbers_pin_else_the_latest(api_a, assistant, tenant_a):
    """As a campaign's calls do (they are outbound calls of the campaign's assistant)."""
    _publish(api_a, assistant)
    _publish(api_a, assistant)
    number = api_a.post("/v2/numbers", {"e164": CALLED, "assistant": assistant.pk}, format="json").json()
    tenant_a.minute_cap = 1000
    tenant_a.save(update_fields=["minute_cap"])

    def dial():
        # A key each: the same request within VOICE_CALL_DEDUP_WINDOW_SEC is the same call.
        response = api_a.post("/voice/v1/calls", {"to": CALLER, "from": CALLED, "assistant": assistant.pk},
                              format="json", headers={"Idempotency-Key": secrets.token_hex(8)})
        assert response.status_code == 201, response.content
        return Call.objects.get(pk=response.json()["id"]).assistant_version

    assert dial() == 2
    api_a.patch(f"/v2/numbers/{number['id']}", {"assistantVersion": 1}, format="json")
    assert dial() == 1


# --- The migration -----------------------------------------------------------------------------

def test_the_migration_publishes_every_existing_assistant_as_v1(tenant_a, tenant_b, assistant):
    from django.apps import apps

    other = Assistant.objects.create(tenant=tenant_b, name="Globex", instructions="Hallo Globex.")
    AssistantVersion.objects.all().delete()
    migration = importlib.import_module("console.assistants.migrations.0007_every_assistant_published_as_v1")
    migration.publish_v1(apps, None)
    migration.publish_v1(apps, None)  # again: nothing twice
    versions = {v.assistant_id: v for v in AssistantVersion.objects.all()}
    assert set(versions) == {assistant.pk, other.pk}
    assert versions[other.pk].tenant_id == tenant_b.pk and versions[other.pk].number == 1
    assert versions[assistant.pk].snapshot == {name: value for name, value in assistant_snapshot(assistant).items()
                                               if name != PARTS}  # its tools as they are (live)
    assert versions[assistant.pk].published_by == "migration"
    from console.assistants.history import version_history

    assert version_history(assistant=assistant)["draftChanges"] == []  # its tools as they are: nothing to publish


# --- The admin ---------------------------------------------------------------------------------

@pytest.fixture
def staff(owner):
    from django.test import Client

    client = Client()
    client.force_login(owner)
    return client


def test_the_admin_shows_draft_and_live_publishes_and_restores_in_german(staff, assistant, tenant_a):
    page = staff.get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode()
    assert "Nie veröffentlicht" in page and "Veröffentlichen" in page
    response = staff.post(f"/admin/assistants/assistant/{assistant.pk}/publish/", {"version_note": "Erste Fassung"})
    assert response.status_code == 302
    version = AssistantVersion.objects.get(assistant=assistant)
    assert (version.number, version.note, version.published_by) == (1, "Erste Fassung", "user:olga-owner")
    Assistant.objects.filter(pk=assistant.pk).update(instructions=NEW)
    page = staff.get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode()
    assert "Anrufer sprechen mit <strong>v1</strong>" in page and "Wiederherstellen" in page
    assert "Unveröffentlichte Änderungen des Entwurfs" in page and "+" + NEW in page  # the draft's line diff
    response = staff.post(f"/admin/assistants/assistant/{assistant.pk}/versions/1/restore/")
    assert response.status_code == 302
    assert Assistant.objects.get(pk=assistant.pk).instructions == OLD
    assert staff.get(f"/admin/assistants/assistant/{assistant.pk}/publish/").status_code == 405


def test_the_admin_does_not_publish_another_tenants_assistant(outsider, assistant):
    from django.test import Client

    client = Client()
    client.force_login(outsider)
    assert client.post(f"/admin/assistants/assistant/{assistant.pk}/publish/").status_code == 404
    assert client.post(f"/admin/assistants/assistant/{assistant.pk}/versions/1/restore/").status_code == 404
    assert not AssistantVersion.objects.exists()


def test_the_numbers_admin_pins_only_a_published_version(staff, api_a, assistant, tenant_a):
    from console.numbers.models import PhoneNumber

    form = {"tenant": tenant_a.pk, "e164": CALLED, "label": "", "assistant": assistant.pk, "assistant_version": "1"}
    page = staff.post("/admin/numbers/phonenumber/add/", form).content.decode()
    assert "Diese Version der Assistenz ist nicht veröffentlicht." in page and not PhoneNumber.objects.exists()
    _publish(api_a, assistant)
    assert staff.post("/admin/numbers/phonenumber/add/", form).status_code == 302
    assert PhoneNumber.objects.get().assistant_version == 1
