"""Writes of scripts: a tenant's override of a touchpoint is put or deleted."""
from django.db import transaction

from console.errors import ValidationFailed
from scripts_app.models import MAX_TEXT_LENGTH, ScriptOverride
from scripts_app.selectors import EffectiveScript, TENANT, known_touchpoint


def check_script_text(text):
    """The message why `text` cannot be a script, or None."""
    if not isinstance(text, str):
        return "Send the script as a string."
    if not text.strip():
        return "The script must not be empty."
    if len(text) > MAX_TEXT_LENGTH:
        return f"The script has {len(text)} characters; at most {MAX_TEXT_LENGTH} are allowed."
    return None


@transaction.atomic
def script_override_put(*, tenant, touchpoint_id, text):
    """Creates or replaces the tenant's override; returns the effective script."""
    tp = known_touchpoint(touchpoint_id)
    problem = check_script_text(text)
    if problem:
        raise ValidationFailed.field("text", problem)
    ScriptOverride.objects.update_or_create(tenant=tenant, touchpoint_id=tp.id, defaults={"text": text})
    return EffectiveScript(tp.id, text, TENANT, tp.max_seconds, tp.opens_call)


@transaction.atomic
def script_override_delete(*, tenant, touchpoint_id):
    """Removes the tenant's override, if any: the default applies again (idempotent)."""
    tp = known_touchpoint(touchpoint_id)
    ScriptOverride.objects.for_tenant(tenant).filter(touchpoint_id=tp.id).delete()
