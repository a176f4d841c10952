import pytest

from tests.conftest import error_of, make_client

pytestmark = pytest.mark.django_db

URL = "/v2/audio/settings"


def test_settings_start_with_the_contract_defaults(api_a):
    assert api_a.get(URL).json() == {"tenant": "acme", "recordingEnabled": False, "transcriptionEnabled": True}


def test_patch_changes_only_the_fields_sent(api_a, tenant_a):
    response = api_a.patch(URL, {"recordingEnabled": True}, format="json")
    assert response.status_code == 200
    assert response.json() == {"tenant": "acme", "recordingEnabled": True, "transcriptionEnabled": True}
    response = api_a.patch(URL, {"transcriptionEnabled": False}, format="json")
    assert response.json() == {"tenant": "acme", "recordingEnabled": True, "transcriptionEnabled": False}
    tenant_a.refresh_from_db()
    assert tenant_a.recording_enabled is True and tenant_a.transcription_enabled is False


@pytest.mark.parametrize("value", ["yes please", "true", 1, 0, None, [], {}])
def test_non_boolean_values_are_400_and_change_nothing(api_a, tenant_a, value):
    response = api_a.patch(URL, {"recordingEnabled": True, "transcriptionEnabled": value}, format="json")
    assert response.status_code == 400
    assert "transcriptionEnabled" in error_of(response)["details"]
    tenant_a.refresh_from_db()
    assert tenant_a.recording_enabled is False


@pytest.mark.parametrize("body", [{}, {"recording": True}, [True]])
def test_an_empty_unknown_or_non_object_body_is_400(api_a, body):
    response = api_a.patch(URL, body, format="json")
    assert response.status_code == 400 and error_of(response)["code"] == "validation_error"


def test_one_tenants_switches_never_touch_anothers(api_a, api_b, tenant_b):
    api_a.patch(URL, {"recordingEnabled": True}, format="json")
    assert api_b.get(URL).json() == {"tenant": "globex", "recordingEnabled": False, "transcriptionEnabled": True}


def test_a_staff_member_of_the_tenant_can_use_the_session(owner, outsider):
    client = make_client(tenant="acme")
    client.force_login(owner)
    assert client.get(URL).json()["tenant"] == "acme"
    client.force_login(outsider)
    assert error_of(client.get(URL))["code"] == "tenant_forbidden"


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_other_methods_are_405(api_a, method):
    assert getattr(api_a, method)(URL, {}, format="json").status_code == 405
