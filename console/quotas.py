"""Per-tenant caps on what a tenant can store (docs/operations.md, "Limits a tenant
cannot lift"): no API key fills the disk.

`QUOTAS` declares each cap once: its name (`details.limit` of the refusal), the
setting that holds its maximum, and its German label for the admin. The app that
owns the rows checks its cap with `quota_check` inside the transaction of the write
(after `quota_lock`, so that two writes at once cannot both take the last place) and
registers how it counts them (`register_usage`, from its AppConfig.ready()), which
the tenant's admin page shows beside the maximum. Caps of resources that do not exist
yet (scenarios) are declared with their settings already: their
apps check them when they come. Erasures are never refused (Art. 17 DSGVO: each
deletes far more than its small receipt keeps), nor a caller's objection.
"""
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext_lazy as _

from console.errors import TenantLimitReached
from console.tenants.models import Tenant


@dataclass(frozen=True)
class Quota:
    name: str  # details.limit of a refusal
    setting: str  # the setting of its maximum
    label: object  # for the admin (German in its catalogue)
    unit: str = "items"  # or "bytes"


QUOTAS: dict[str, Quota] = {quota.name: quota for quota in (
    Quota("assistants", "TENANT_MAX_ASSISTANTS", _("Assistants")),
    Quota("versions", "TENANT_MAX_ASSISTANT_VERSIONS", _("Published assistant versions")),
    Quota("numbers", "TENANT_MAX_NUMBERS", _("Phone numbers")),
    Quota("campaigns", "TENANT_MAX_CAMPAIGNS", _("Campaigns of the tenant")),
    Quota("contacts", "TENANT_MAX_CONTACTS", _("Contacts of all campaigns")),
    Quota("blocklist", "TENANT_MAX_BLOCKED_NUMBERS", _("Blocked numbers")),
    Quota("leads", "TENANT_MAX_LEADS", _("Leads of the tenant")),
    Quota("exports", "TENANT_MAX_EXPORTS", _("Data exports")),
    Quota("recordingBytes", "TENANT_MAX_RECORDING_BYTES", _("Recordings (bytes)"), unit="bytes"),
    # Not what the tenant keeps but what it sends: its SMS of today (messaging_app).
    Quota("smsPerDay", "TENANT_MAX_SMS_PER_DAY", _("SMS today")),
    Quota("scenarios", "TENANT_MAX_SCENARIOS", _("Scenarios")),
    Quota("scenarioRuns", "TENANT_MAX_SCENARIO_RUNS_PER_DAY", _("Test runs in the last 24 hours")),
    Quota("calendars", "TENANT_MAX_CALENDARS", _("Connected calendars")),
)}

_usage: dict[str, Callable[[Tenant], int]] = {}


def quota_max(name: str) -> int:
    return int(getattr(settings, QUOTAS[name].setting))


def quota_take(*, tenant: Tenant, name: str, adding: int = 1) -> None:
    """Within the write's transaction, before it writes: 409 `tenant_limit_reached`
    when `adding` more would take the tenant past the cap `name` (counted by the owning
    app's registered count). The tenant's row is locked first, so that two writes at
    once cannot both take the last place; NO KEY: rows that point at the tenant (calls,
    leads) are still inserted meanwhile."""
    Tenant.objects.select_for_update(no_key=True).filter(pk=tenant.pk).first()
    quota_refuse_past(name=name, used=_usage[name](tenant), adding=adding)


def quota_refuse_past(*, name: str, used: int, adding: int) -> None:
    """409 `tenant_limit_reached` when `used` and `adding` more exceed the cap `name`."""
    quota, limit = QUOTAS[name], quota_max(name)
    if used + adding > limit:
        raise TenantLimitReached(
            f"The tenant keeps {used:,} of {limit:,} {quota.name} allowed ({quota.setting}); {adding:,} more do "
            "not fit. Delete some first.",
            details={"limit": quota.name, "setting": quota.setting, "max": limit, "used": used, "adding": adding})


def register_usage(name: str, count: Callable[[Tenant], int]) -> None:
    """How the owning app counts what a tenant keeps of `name` (from AppConfig.ready())."""
    if name not in QUOTAS:
        raise KeyError(name)
    _usage[name] = count


def quota_usage(tenant: Tenant) -> list[tuple[Quota, int | None, int]]:
    """(quota, used or None where nothing counts it yet, maximum) of every cap."""
    return [(quota, _usage[name](tenant) if name in _usage else None, quota_max(name))
            for name, quota in QUOTAS.items()]
