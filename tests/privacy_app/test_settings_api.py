"""GET/PATCH /v2/privacy/settings and the retention settings in the admin."""
import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from console.audit.models import AuditEntry
from privacy_app.models import RetentionSettings
from tests.conftest import error_of, make_client

pytestmark = pytest.mark.django_db

URL = "/v2/privacy/settings"


def test_a_tenant_that_never_chose_reads_the_defaults(api_a):
    assert api_a.get(URL).json() == {"tenant": "acme", "transcriptDays": 90, "recordingDays": 30, "leadDays": 180,
                                     "deliveryDays": 30}


def test_patch_changes_what_is_sent_and_null_means_without_limit(api_a, tenant_a):
    response = api_a.patch(URL, {"transcriptDays": 30, "leadDays": None}, format="json")
    assert response.status_code == 200
    assert response.json() == {"tenant": "acme", "transcriptDays": 30, "recordingDays": 30, "leadDays": None,
                               "deliveryDays": 30}
    assert api_a.get(URL).json()["leadDays"] is None
    stored = RetentionSettings.objects.get(tenant=tenant_a)
    assert (stored.transcript_days, stored.recording_days, stored.lead_days) == (30, 30, None)


@pytest.mark.parametrize("value", [0, -1, 36501, "30", 1.5, True, [], {}])
def test_days_must_be_a_whole_number_in_range(api_a, tenant_a, value):
    response = api_a.patch(URL, {"transcriptDays": value}, format="json")
    assert response.status_code == 400
    assert list(error_of(response)["details"]) == ["transcriptDays"]
    assert not RetentionSettings.objects.exists()


@pytest.mark.parametrize("body", [{}, {"transcript_days": 5}, {"leadDays": 5, "recordingDays": "x"}])
def test_an_empty_or_unknown_or_partly_invalid_body_changes_nothing(api_a, tenant_a, body):
    assert api_a.patch(URL, body, format="json").status_code == 400
    assert not RetentionSettings.objects.exists()


def test_each_tenant_sees_and_changes_only_its_own(api_a, api_b, tenant_a, tenant_b):
    api_b.patch(URL, {"transcriptDays": 7}, format="json")
    assert api_a.get(URL).json()["transcriptDays"] == 90
    assert api_b.get(URL).json() == {"tenant": "globex", "transcriptDays": 7, "recordingDays": 30, "leadDays": 180,
                                     "deliveryDays": 30}


def test_settings_need_credentials_and_other_methods_are_405(api_a, tenant_a):
    assert make_client(tenant="acme").get(URL).status_code == 401
    assert api_a.post(URL, {}, format="json").status_code == 405
    assert api_a.put(URL, {}, format="json").status_code == 405


def test_a_change_is_in_the_audit_trail(api_a, tenant_a):
    api_a.patch(URL, {"recordingDays": 14}, format="json")
    [entry] = AuditEntry.objects.all()
    assert (entry.action, entry.tenant, entry.details["fields"]) == ("PATCH /v2/privacy/settings", tenant_a,
                                                                     ["recordingDays"])


def test_owners_change_their_tenants_settings_in_the_admin(owner, tenant_a, tenant_b):
    owner.user_permissions.set(Permission.objects.filter(content_type__app_label="privacy_app"))
    client = Client()
    client.force_login(owner)
    response = client.post("/admin/privacy_app/retentionsettings/add/",
                           {"tenant": tenant_a.pk, "transcript_days": "14", "recording_days": "", "lead_days": "60"})
    assert response.status_code == 302
    stored = RetentionSettings.objects.get(tenant=tenant_a)
    assert (stored.transcript_days, stored.recording_days, stored.lead_days) == (14, None, 60)
    refused = client.post("/admin/privacy_app/retentionsettings/add/",
                          {"tenant": tenant_b.pk, "transcript_days": "1", "recording_days": "1", "lead_days": "1"})
    assert refused.status_code == 200 and not RetentionSettings.objects.filter(tenant=tenant_b).exists()
    assert AuditEntry.objects.get().action == "admin.add privacy_app.retentionsettings"
