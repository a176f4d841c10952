"""`manage.py check` refuses gateway settings the gateway cannot act on."""
import pytest

from gateway_app.checks import gateway_settings


def test_the_defaults_pass():
    assert gateway_settings(None) == []


@pytest.mark.parametrize("name, value, error", [
    ("GATEWAY_MODE", "api", "gateway_app.E001"),
    ("GATEWAY_LANE_SETTINGS", {"GATEWAY_MODE_CHAT_X": "remote"}, "gateway_app.E002"),
    ("GATEWAY_TIMEOUT_SEC", 0, "gateway_app.E003"),
    ("GATEWAY_DEADLINE_SEC", 29, "gateway_app.E003"),
    ("GATEWAY_FIRST_TOKEN_SEC", 0, "gateway_app.E003"),
    ("GATEWAY_STREAM_IDLE_SEC", 26, "gateway_app.E003"),
    ("GATEWAY_MAX_EUR", -1, "gateway_app.E004"),
])
def test_a_setting_it_cannot_act_on_is_an_error(settings, name, value, error):
    setattr(settings, name, value)
    assert [found.id for found in gateway_settings(None)] == [error]
