"""Reads of scripts: the effective script of a touchpoint for a tenant (the
catalog's default overlaid with the tenant's override) and its analysis.

Used by the API, the admin and the audio render (which speaks `text`, prepends the
disclosure when `opens_call` and caches by the effective text).
"""
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from console.listing import Read
from console.tenants.models import Tenant
from scripts_app.analysis import analyze
from scripts_app.catalog import Touchpoint, catalog, touchpoint
from scripts_app.errors import UnknownTouchpoint
from scripts_app.models import ScriptOverride

DEFAULT, TENANT = "default", "tenant"
# Distinct (text, maxSeconds) analyses kept per process: the catalog's defaults are the
# same for every tenant, and an override is analysed again only when it changes.
ANALYSES_KEPT = 2048


@dataclass(frozen=True)
class EffectiveScript:
    touchpoint_id: str
    text: str
    source: str  # DEFAULT or TENANT
    max_seconds: int
    opens_call: bool

    def analysis(self) -> dict[str, Any]:
        """{words, durationSec, variables, findings} of the text (CONTRACT §3). Shared by
        every request that analyses the same text: read it, never change it."""
        return _analysis(self.text, self.max_seconds)


@lru_cache(maxsize=ANALYSES_KEPT)
def _analysis(text: str, max_seconds: int) -> dict[str, Any]:
    # The analysis is a function of the text and maxSeconds alone (and of the lexicon,
    # fixed for the life of the process).
    return analyze(text, max_seconds)


def analyse_catalog_defaults() -> None:
    """Analyses every default script of the catalog (and so reads the lexicon); run
    when a server worker starts (console/warmup.py)."""
    for tp in catalog().values():
        _analysis(tp.text, tp.max_seconds)


def _effective(tp: Touchpoint, override_text: str | None) -> EffectiveScript:
    if override_text is None:
        return EffectiveScript(tp.id, tp.text, DEFAULT, tp.max_seconds, tp.opens_call)
    return EffectiveScript(tp.id, override_text, TENANT, tp.max_seconds, tp.opens_call)


def known_touchpoint(touchpoint_id: str) -> Touchpoint:
    """The catalog's touchpoint; UnknownTouchpoint (404) if the catalog has none."""
    tp = touchpoint(touchpoint_id)
    if tp is None:
        raise UnknownTouchpoint(touchpoint_id)
    return tp


_override_texts = Read(ScriptOverride, ("touchpoint_id", "text"))


def effective_scripts(tenant: Tenant) -> list[EffectiveScript]:
    """Every touchpoint of the catalog, in catalog order, as the tenant hears it (one query)."""
    overrides = dict(_override_texts(tenant.id))
    return [_effective(tp, overrides.get(tp.id)) for tp in catalog().values()]


def effective_script(tenant: Tenant, touchpoint_id: str) -> EffectiveScript:
    """The touchpoint's effective script for the tenant; UnknownTouchpoint if not in the catalog."""
    tp = known_touchpoint(touchpoint_id)
    text = ScriptOverride.objects.for_tenant(tenant).filter(touchpoint_id=tp.id).values_list("text", flat=True).first()
    return _effective(tp, text)
