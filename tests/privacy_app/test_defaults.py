"""Defaults that minimise: a new tenant records nothing of a call's audio."""
import pytest

from console.tenants.services import tenant_create

pytestmark = pytest.mark.django_db


def test_a_new_tenant_has_recording_off(api_a):
    assert tenant_create(slug="neu", name="Neu").recording_enabled is False
    assert api_a.get("/v2/audio/settings").json()["recordingEnabled"] is False
