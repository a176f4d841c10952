"""Writes of scripts (a tenant's override of a touchpoint is put or deleted) and their rendering to speech."""
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils.translation import gettext

from console.errors import ValidationFailed
from console.tenants.models import Tenant
from scripts_app.analysis.text import VARIABLE, variables_of
from scripts_app.errors import MissingVariables
from scripts_app.models import MAX_TEXT_LENGTH, ScriptOverride
from scripts_app.selectors import TENANT, EffectiveScript, effective_script, known_touchpoint
from speech_app.cache import RenderedAudio
from speech_app.services import speech_render


def check_script_text(text: object) -> str | None:
    """The message why `text` cannot be a script, or None."""
    if not isinstance(text, str):
        return gettext("Send the script as a string.")
    if not text.strip():
        return gettext("The script must not be empty.")
    if len(text) > MAX_TEXT_LENGTH:
        return gettext("The script has %(length)s characters; at most %(limit)s are allowed.") % {
            "length": len(text), "limit": MAX_TEXT_LENGTH}
    return None


@transaction.atomic
def script_override_put(*, tenant: Tenant, touchpoint_id: str, text: str) -> EffectiveScript:
    """Creates or replaces the tenant's override; returns the effective script."""
    tp = known_touchpoint(touchpoint_id)
    problem = check_script_text(text)
    if problem:
        raise ValidationFailed.field("text", problem)
    ScriptOverride.objects.update_or_create(tenant=tenant, touchpoint_id=tp.id, defaults={"text": text})
    return EffectiveScript(tp.id, text, TENANT, tp.max_seconds, tp.opens_call)


@transaction.atomic
def script_override_delete(*, tenant: Tenant, touchpoint_id: str) -> None:
    """Removes the tenant's override, if any: the default applies again (idempotent)."""
    tp = known_touchpoint(touchpoint_id)
    ScriptOverride.objects.for_tenant(tenant).filter(touchpoint_id=tp.id).delete()


def effective_text(script: EffectiveScript, *, variables: Mapping[str, Any], disclosure: str) -> str:
    """The spoken text of a script: variables filled, the disclosure before call openers."""
    missing = [name for name in variables_of(script.text) if name not in variables]
    if missing:
        raise MissingVariables(f"Values are missing for: {', '.join(missing)}.", details={"missing": missing})
    text = VARIABLE.sub(lambda match: str(variables[match.group(1)]), script.text)
    if script.opens_call:
        # Art. 50: the caller hears first that an AI speaks; it cannot be switched off.
        text = f"{disclosure.strip()} {text}"
    return text


# What the console's play button fills in for a script's variables.
SAMPLE_VALUES = {"companyName": "Muster GmbH", "firstName": "Anna", "date": "Montag, 24. November",
                 "time": "10 Uhr", "preferredTime": "morgen Vormittag", "phone": "030 901820"}


def sample_variables(text: str) -> dict[str, str]:
    """A value for every variable of `text`: the samples above, else "Beispiel"."""
    return {name: SAMPLE_VALUES.get(name, "Beispiel") for name in variables_of(text)}


def script_preview(*, tenant: Tenant, touchpoint_id: str,
                   text: str | None = None) -> tuple[RenderedAudio, bool]:
    """The console's play button: `text` (the text being edited; else the effective
    script) as the caller would hear it — disclosure first where the touchpoint opens
    a call, sample values for the variables — as MP3: (rendered, from_cache)."""
    script = effective_script(tenant, touchpoint_id)
    if text is not None:
        problem = check_script_text(text)
        if problem:
            raise ValidationFailed.field("text", problem)
        script = EffectiveScript(script.touchpoint_id, text, TENANT, script.max_seconds, script.opens_call)
    spoken = effective_text(script, variables=sample_variables(script.text), disclosure=tenant.disclosure_text)
    return speech_render(text=spoken)


def script_render(*, tenant: Tenant, touchpoint: str, variables: Mapping[str, Any],
                  voice: str | None = None) -> tuple[RenderedAudio, bool]:
    """The effective script of `touchpoint` for `tenant` as MP3: (rendered, from_cache)."""
    script = effective_script(tenant, touchpoint)
    text = effective_text(script, variables=variables, disclosure=tenant.disclosure_text)
    return speech_render(text=text, voice=voice)
