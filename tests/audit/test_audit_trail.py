"""The audit trail records every write of the API and the admin with its actor, holds
no written values, and is append-only (console.audit)."""
import re
from pathlib import Path

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth.models import Permission
from django.test import Client

from calls_app.services import carrier_create
from console.audit.models import AppendOnly, AuditEntry
from console.audit.services import audit_record
from console.credentials.models import ApiKey
from leads_app.models import Lead
from leads_app.services import lead_create
from tests.conftest import make_client

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def entries(**filters):
    return list(AuditEntry.objects.filter(**filters).order_by("at", "id"))


def admin_client(user, *app_labels):
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=app_labels))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def lead_a(tenant_a):
    return lead_create(tenant=tenant_a, kind="callback", phone="+491712345678")


# --- API writes --------------------------------------------------------------------------

def test_an_api_write_is_recorded_with_the_key_prefix_and_the_request_id(api_a, key_a, tenant_a, lead_a):
    response = api_a.patch(f"/v2/leads/{lead_a.pk}", {"status": "contacted"}, format="json",
                           HTTP_X_REQUEST_ID="req-4711")
    assert response.status_code == 200

    [entry] = entries()
    prefix = ApiKey.objects.get(tenant=tenant_a).prefix
    assert (entry.actor, entry.tenant, entry.tenant_slug) == (f"key:{prefix}", tenant_a, "acme")
    assert (entry.action, entry.object_id, entry.request_id) == ("PATCH /v2/leads/{pk}", lead_a.pk, "req-4711")
    assert entry.details == {"status": 200, "fields": ["status"]}
    assert key_a not in str(entry.__dict__)


def test_a_created_object_is_recorded_by_the_id_in_the_answer(api_a, tenant_a):
    response = api_a.post("/v2/numbers", {"e164": "+493055501234", "label": "Zentrale"}, format="json")
    [entry] = entries()
    assert (entry.action, entry.object_id) == ("POST /v2/numbers", response.json()["id"])
    assert entry.details["fields"] == ["e164", "label"]  # names only, never the values
    assert "+493055501234" not in str(entry.details) and "Zentrale" not in str(entry.details)


def test_a_deletion_is_recorded(api_a, tenant_a):
    number_id = api_a.post("/v2/numbers", {"e164": "+493055501234"}, format="json").json()["id"]
    assert api_a.delete(f"/v2/numbers/{number_id}").status_code == 204
    assert [(e.action, e.object_id) for e in entries()][-1] == ("DELETE /v2/numbers/{pk}", number_id)


def test_a_session_users_write_is_recorded_with_the_user(owner, tenant_a, lead_a):
    client = make_client(tenant="acme")
    client.force_authenticate(owner)
    assert client.patch(f"/v2/leads/{lead_a.pk}", {"status": "lost"}, format="json").status_code == 200
    assert entries()[0].actor == "user:olga-owner"


def test_reads_failed_writes_and_replays_are_not_recorded(api_a, tenant_a, lead_a):
    api_a.get("/v2/leads")
    api_a.patch(f"/v2/leads/{lead_a.pk}", {"status": "pizza"}, format="json")
    api_a.patch("/v2/leads/ld_unknown", {"status": "lost"}, format="json")
    assert entries() == []

    headers = {"HTTP_IDEMPOTENCY_KEY": "k-1"}
    first = api_a.post("/voice/v1/calls", {"to": "+491761234567"}, format="json", **headers)
    again = api_a.post("/voice/v1/calls", {"to": "+491761234567"}, format="json", **headers)
    assert (first.status_code, again["Idempotent-Replayed"]) == (201, "true")
    assert [(e.action, e.object_id) for e in entries()] == [("POST /voice/v1/calls", first.json()["id"])]


def test_posts_that_write_nothing_are_not_recorded(api_a, tenant_a):
    api_a.post("/v2/audio/transcribe", {"audio_base64": ""}, format="json")
    assert entries() == []


def test_writes_of_another_tenant_are_recorded_under_that_tenant(api_a, api_b, tenant_a, tenant_b):
    api_b.post("/v2/numbers", {"e164": "+493055509999"}, format="json")
    [entry] = entries()
    assert (entry.tenant, entry.tenant_slug) == (tenant_b, "globex")


# --- Admin writes ------------------------------------------------------------------------

def test_an_admin_change_is_recorded_with_the_staff_user(owner, tenant_a, lead_a):
    client = admin_client(owner, "leads_app")
    response = client.post(f"/admin/leads_app/lead/{lead_a.pk}/change/", {"status": "qualified"},
                           HTTP_X_REQUEST_ID="adm-1")
    assert response.status_code == 302
    [entry] = entries()
    assert (entry.actor, entry.action, entry.object_id) == ("user:olga-owner", "admin.change leads_app.lead", lead_a.pk)
    assert (entry.tenant, entry.request_id) == (tenant_a, "adm-1")


def test_an_admin_action_is_recorded_with_the_objects_it_ran_on(owner, tenant_a, lead_a):
    other = lead_create(tenant=tenant_a, kind="contact", phone="+49301234567")
    client = admin_client(owner, "leads_app")
    client.post("/admin/leads_app/lead/", {"action": "mark_spam", ACTION_CHECKBOX_NAME: [lead_a.pk, other.pk]})
    assert set(Lead.objects.values_list("status", flat=True)) == {"spam"}
    [entry] = entries()
    assert (entry.actor, entry.action, entry.tenant) == ("user:olga-owner", "admin.action:mark_spam leads_app.lead",
                                                         tenant_a)
    assert sorted(entry.details["objects"]) == sorted([lead_a.pk, other.pk])


def test_admin_additions_and_deletions_are_recorded(owner, tenant_a):
    client = admin_client(owner, "numbers")
    client.post("/admin/numbers/phonenumber/add/", {"tenant": tenant_a.pk, "e164": "+493055501234", "label": ""})
    [added] = entries()
    assert (added.action, added.tenant) == ("admin.add numbers.phonenumber", tenant_a)
    client.post(f"/admin/numbers/phonenumber/{added.object_id}/delete/", {"post": "yes"})
    assert [(e.action, e.object_id) for e in entries()][-1] == ("admin.delete numbers.phonenumber", added.object_id)


def test_an_api_key_created_in_the_admin_is_recorded_without_the_key(owner, tenant_a):
    client = admin_client(owner, "credentials")
    page = client.post("/admin/credentials/apikey/add/", {"tenant": tenant_a.pk, "name": "CRM"})
    raw_key = re.search(r"swk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", page.content.decode()).group(0)
    [entry] = entries()
    assert entry.action == "admin.add credentials.apikey"
    assert raw_key[17:] not in str(entry.__dict__)  # the secret part


def test_a_carrier_changed_in_the_admin_is_recorded_without_a_tenant(django_user_model):
    carrier_create(carrier_id="sipgate", name="Sipgate")
    superuser = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(superuser)
    client.post("/admin/calls_app/carrier/sipgate/change/", {"name": "Sipgate GmbH", "caller_id": ""})
    [entry] = entries()
    assert (entry.action, entry.object_id, entry.tenant, entry.actor) == (
        "admin.change calls_app.carrier", "sipgate", None, "user:root")


# --- Who sees the trail ------------------------------------------------------------------

def test_owners_see_their_tenants_entries_in_the_admin(owner, teammate, outsider, tenant_a, tenant_b):
    mine = audit_record(actor="user:x", action="test", tenant=tenant_a)
    theirs = audit_record(actor="user:x", action="test", tenant=tenant_b)
    client = Client()
    client.force_login(owner)
    listed = {e.pk for e in client.get("/admin/audit/auditentry/").context["cl"].result_list}
    assert listed == {mine.pk}
    assert client.get(f"/admin/audit/auditentry/{theirs.pk}/change/").status_code == 302  # "does not exist"
    assert client.get(f"/admin/audit/auditentry/{mine.pk}/change/").status_code == 200


def test_members_who_are_not_owners_do_not_see_the_trail(teammate, tenant_a):
    audit_record(actor="user:x", action="test", tenant=tenant_a)
    client = Client()
    client.force_login(teammate)
    assert client.get("/admin/audit/auditentry/").status_code == 403


def test_nobody_can_add_change_or_delete_entries_in_the_admin(owner, tenant_a, django_user_model):
    entry = audit_record(actor="user:x", action="test", tenant=tenant_a)
    superuser = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(superuser)
    assert client.get("/admin/audit/auditentry/add/").status_code == 403
    assert client.post(f"/admin/audit/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    client.post(f"/admin/audit/auditentry/{entry.pk}/change/", {"action": "forged"})
    assert AuditEntry.objects.get().action == "test"


# --- Append-only -------------------------------------------------------------------------

def test_an_entry_cannot_be_changed_or_deleted(tenant_a):
    entry = audit_record(actor="user:x", action="test", tenant=tenant_a)
    entry.action = "forged"
    with pytest.raises(AppendOnly):
        entry.save()
    with pytest.raises(AppendOnly):
        entry.delete()
    with pytest.raises(AppendOnly):
        AuditEntry.objects.filter(pk=entry.pk).update(action="forged")
    with pytest.raises(AppendOnly):
        AuditEntry.objects.all().delete()
    assert AuditEntry.objects.get().action == "test"


def test_deleting_a_tenant_keeps_its_trail(tenant_b):
    audit_record(actor="user:x", action="test", tenant=tenant_b)
    tenant_b.delete()
    assert AuditEntry.objects.get().tenant_slug == "globex"


AUDIT_NAMES = re.compile(r"AuditEntry|audit_auditentry|auditentry_set")
WRITES = re.compile(r"\.(update|delete|bulk_update|_raw_delete|update_or_create)\(|\b(UPDATE|DELETE FROM)\b")


def source_files():
    for package in ("console", "registry_app", "speech_app", "scripts_app", "calls_app", "leads_app",
                    "privacy_app"):
        yield from (path for path in (ROOT / package).rglob("*.py") if "migrations" not in path.parts)


def offending_statements(source):
    """Statements (top-level blocks or blank-line separated parts) that name the audit
    model and change or delete something; the model's own refusals excepted."""
    statements = re.split(r"\n(?=\S)|\n\s*\n", source)
    return [s for s in statements if AUDIT_NAMES.search(s) and WRITES.search(s) and "raise AppendOnly" not in s]


@pytest.mark.parametrize("source", [
    "AuditEntry.objects.filter(pk=1).delete()",
    "AuditEntry.objects.update(action='x')",
    "def forget():\n    entries = AuditEntry.objects.all()\n    entries.update(actor='x')",
    'cursor.execute("DELETE FROM audit_auditentry")',
])
def test_the_check_finds_a_change_or_deletion(source):
    assert offending_statements(source)


def test_no_code_path_updates_or_deletes_an_audit_entry():
    offenders = [f"{path.relative_to(ROOT)}: {statement[:200]}"
                 for path in source_files() for statement in offending_statements(path.read_text())]
    assert offenders == []
    assert any(path.name == "models.py" and "audit" in path.parts for path in source_files())
