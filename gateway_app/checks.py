"""`manage.py check` (and every start) refuses gateway settings it cannot act on."""
from django.conf import settings
from django.core.checks import Error, register

from registry_app.lanes.config import GATEWAY_MODES, LANE_MODES


@register()
def gateway_settings(app_configs, **kwargs):
    errors = []
    if settings.GATEWAY_MODE not in GATEWAY_MODES:
        errors.append(Error(f"GATEWAY_MODE is '{settings.GATEWAY_MODE}'; it must be one of {', '.join(GATEWAY_MODES)}.",
                            id="gateway_app.E001"))
    for name, value in sorted(settings.GATEWAY_LANE_SETTINGS.items()):
        if name.startswith("GATEWAY_MODE_") and value.strip() not in LANE_MODES:
            errors.append(Error(f"{name} is '{value}'; it must be one of {', '.join(LANE_MODES)}.",
                                id="gateway_app.E002"))
    for name in ("GATEWAY_TIMEOUT_SEC", "GATEWAY_DEADLINE_SEC", "GATEWAY_CONNECT_TIMEOUT_SEC", "GATEWAY_FIRST_TOKEN_SEC",
                 "GATEWAY_STREAM_IDLE_SEC"):
        if not 0 < getattr(settings, name) <= 25:
            errors.append(Error(f"{name} must be more than 0 and at most 25 seconds (gunicorn stops a request "
                                "after 30).", id="gateway_app.E003"))
    if settings.GATEWAY_MAX_EUR < 0 or settings.GATEWAY_COOLDOWN_SEC < 0:
        errors.append(Error("GATEWAY_MAX_EUR and GATEWAY_COOLDOWN_SEC must not be negative.", id="gateway_app.E004"))
    return errors
