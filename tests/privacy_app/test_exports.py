"""Access by caller (Art. 15): POST /v2/privacy/exports, the document, its expiry, large
exports left to `build_exports`, and the download in the admin."""
import datetime as dt
import io
import json

import pytest
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client, override_settings

from console.audit.models import AuditEntry
from privacy_app.models import Export
from tests.conftest import error_of
from tests.privacy_app.conftest import CALLER, CALLER_NATIONAL, NUMBER_A, START, make_lead, play_call

pytestmark = pytest.mark.django_db

URL = "/v2/privacy/exports"


@pytest.fixture
def callers_data(clock, numbers, carrier_client, tenant_a, tenant_b):
    """The caller's two calls and a lead at A, a call of someone else at A, and the same
    caller's call and lead at B."""
    return {
        "calls_a": [play_call(carrier_client, text="Erster Anruf bei A"),
                    play_call(carrier_client, text="Zweiter Anruf bei A")],
        "other_a": play_call(carrier_client, caller="+4915112345678", text="Jemand anderes"),
        "lead_a": make_lead(tenant_a, consent_version="callback-de-1"),
        "call_b": play_call(carrier_client, to=numbers[1].e164, text="Anruf bei B"),
        "lead_b": make_lead(tenant_b),
    }


def export_of(api, phone):
    response = api.post(URL, {"phone": phone}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_an_export_holds_the_callers_calls_with_transcripts_leads_and_events(api_a, callers_data):
    export = export_of(api_a, CALLER)
    assert export["id"].startswith("ex_") and export["status"] == "ready" and export["phone"] == CALLER
    document = export["document"]
    assert (document["format"], document["version"], document["tenant"], document["phone"]) == (
        "stimmwerk.privacy-export", 1, "acme", CALLER)
    assert [c["id"] for c in document["calls"]] == [c.pk for c in callers_data["calls_a"]]
    assert [line["text"] for line in document["calls"][0]["transcript"]] == [
        "Guten Tag, Praxis Acme.", "Erster Anruf bei A"]
    assert [lead["id"] for lead in document["leads"]] == [callers_data["lead_a"].pk]
    assert document["leads"][0]["consent_version"] == "callback-de-1"
    assert {e["type"] for e in document["carrierEvents"]} == {
        "call.started", "call.disclosed", "call.transcript", "call.ended"}
    assert len(document["carrierEvents"]) == 10
    assert "Jemand anderes" not in json.dumps(document)


def test_national_and_international_forms_find_the_same_rows(api_a, callers_data):
    def rows(export):
        document = export["document"]
        return ([c["id"] for c in document["calls"]], [lead["id"] for lead in document["leads"]],
                [e["eventId"] for e in document["carrierEvents"]])

    forms = [CALLER, CALLER_NATIONAL, "+49 176 1234567", "0049 176 1234567", "(0176) 123-4567"]
    found = [rows(export_of(api_a, phone)) for phone in forms]
    assert all(one == found[0] for one in found) and found[0][0]


def test_another_tenants_data_never_appears(api_a, api_b, callers_data):
    document = json.dumps(export_of(api_a, CALLER)["document"], ensure_ascii=False)
    assert "Anruf bei B" not in document and callers_data["lead_b"].pk not in document
    assert callers_data["call_b"].pk not in document and "globex" not in document
    other = export_of(api_b, CALLER)["document"]
    assert [c["id"] for c in other["calls"]] == [callers_data["call_b"].pk]


def test_an_unknown_number_gives_an_empty_export(api_a, callers_data):
    document = export_of(api_a, "+491709999999")["document"]
    assert (document["calls"], document["leads"], document["carrierEvents"]) == ([], [], [])


@pytest.mark.parametrize(("body", "field"), [
    ({"phone": "abc"}, "phone"), ({"phone": "123"}, "phone"), ({"phone": 491761234567}, "phone"), ({}, "phone"),
    ({"phone": CALLER, "name": "x"}, "name"),
])
def test_a_bad_request_is_400_and_stores_nothing(api_a, tenant_a, body, field):
    response = api_a.post(URL, body, format="json")
    assert response.status_code == 400 and field in error_of(response)["details"]
    assert not Export.objects.exists() and not AuditEntry.objects.exists()


def test_the_tenants_own_number_is_not_a_caller(api_a, numbers):
    response = api_a.post(URL, {"phone": NUMBER_A}, format="json")
    assert response.status_code == 400 and "phone" in error_of(response)["details"]


def test_an_export_can_be_read_again_and_listed_until_it_expires(api_a, callers_data, clock):
    export = export_of(api_a, CALLER)
    assert export["expiresAt"] == (START + dt.timedelta(days=7)).isoformat().replace("+00:00", "Z")
    clock.set(START + dt.timedelta(days=6, hours=23))
    assert api_a.get(f"{URL}/{export['id']}").json() == export
    listed = api_a.get(URL).json()["exports"]
    assert [e["id"] for e in listed] == [export["id"]] and "document" not in listed[0]
    clock.set(START + dt.timedelta(days=7))
    expired = api_a.get(f"{URL}/{export['id']}")
    assert expired.status_code == 410 and error_of(expired)["code"] == "export_expired"


def test_another_tenants_export_is_404_like_an_unknown_one(api_a, api_b, callers_data):
    export = export_of(api_a, CALLER)
    assert api_b.get(f"{URL}/{export['id']}").status_code == 404
    assert api_b.get(f"{URL}/ex_unknown").status_code == 404
    assert api_b.get(URL).json() == {"exports": []}


def test_an_export_is_in_the_audit_trail_without_the_number(api_a, key_a, callers_data):
    export = export_of(api_a, CALLER_NATIONAL)
    [entry] = AuditEntry.objects.filter(action="privacy.export")
    assert entry.object_id == export["id"] and entry.actor.startswith("key:swk_")
    assert entry.details == {"status": "ready", "rows": 17}  # 2 calls, 4 lines, 1 lead, 10 events
    assert "1761234567" not in str(entry.__dict__)
    assert not AuditEntry.objects.exclude(action="privacy.export").exists()  # recorded once


@override_settings(PRIVACY_EXPORT_SYNC_ROWS=5)
def test_a_large_export_is_built_by_build_exports(api_a, callers_data):
    response = api_a.post(URL, {"phone": CALLER}, format="json")
    assert response.status_code == 202
    pending = response.json()
    assert (pending["status"], pending["document"], pending["readyAt"]) == ("pending", None, None)
    call_command("build_exports", stdout=(out := io.StringIO()))
    assert "1 export(s) built." in out.getvalue()
    ready = api_a.get(f"{URL}/{pending['id']}").json()
    assert ready["status"] == "ready" and len(ready["document"]["calls"]) == 2
    call_command("build_exports", stdout=(again := io.StringIO()))
    assert "0 export(s) built." in again.getvalue()


def admin_client(user):
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="privacy_app"))
    client = Client()
    client.force_login(user)
    return client


def test_an_owner_requests_and_downloads_an_export_in_the_admin(owner, tenant_a, callers_data):
    client = admin_client(owner)
    response = client.post("/admin/privacy_app/export/add/", {"tenant": tenant_a.pk, "phone": CALLER_NATIONAL})
    export = Export.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/{export.pk}/change/")
    assert client.get("/admin/privacy_app/export/").status_code == 200
    download = client.get(f"/admin/privacy_app/export/{export.pk}/download/")
    assert download.status_code == 200
    assert download["Content-Disposition"] == f'attachment; filename="{export.pk}.json"'
    assert json.loads(download.content)["phone"] == CALLER
    actions = list(AuditEntry.objects.order_by("at", "id").values_list("action", "actor"))
    assert actions == [("privacy.export", "user:olga-owner"), ("privacy.export.download", "user:olga-owner")]


def test_the_admin_refuses_a_bad_number_and_other_tenants_exports(owner, outsider, tenant_a, callers_data):
    client = admin_client(owner)
    page = client.post("/admin/privacy_app/export/add/", {"tenant": tenant_a.pk, "phone": "abc"})
    assert page.status_code == 200 and not Export.objects.exists()
    client.post("/admin/privacy_app/export/add/", {"tenant": tenant_a.pk, "phone": CALLER})
    export = Export.objects.get()
    assert admin_client(outsider).get(f"/admin/privacy_app/export/{export.pk}/download/").status_code == 404


def test_the_command_prints_the_document_and_refuses_bad_input(callers_data):
    call_command("privacy_export", "acme", CALLER_NATIONAL, stdout=(out := io.StringIO()))
    assert [c["id"] for c in json.loads(out.getvalue())["calls"]] == [c.pk for c in callers_data["calls_a"]]
    for args, message in ((("nope", CALLER), "No tenant 'nope'"), (("acme", "abc"), "no letters"),
                          (("acme", NUMBER_A), "tenant's own numbers")):
        with pytest.raises(CommandError, match=message):
            call_command("privacy_export", *args)
