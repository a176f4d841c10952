"""Reads of messaging_app: the tenant's settings, its SMS, and what an export holds."""
import datetime as dt
import zoneinfo
from collections.abc import Collection
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from console.tenants.models import Tenant
from messaging_app.models import MessagingSettings, Sms


def messaging_settings_for(*, tenant: Tenant) -> MessagingSettings:
    """The tenant's settings (unsaved defaults where it never chose)."""
    return MessagingSettings.objects.for_tenant(tenant).select_related("twilio_carrier").first() or \
        MessagingSettings(tenant=tenant)


def day_start(tenant: Tenant, now: dt.datetime | None = None) -> dt.datetime:
    """Midnight of today on the tenant's clock."""
    local = (now or timezone.now()).astimezone(zoneinfo.ZoneInfo(tenant.time_zone))
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def sms_today_count(tenant: Tenant) -> int:
    """The tenant's SMS made today (its zone): what the daily cap counts."""
    return Sms.objects.for_tenant(tenant).filter(created_at__gte=day_start(tenant)).count()


def sms_list(*, tenant: Tenant, limit: int) -> QuerySet[Sms]:
    return Sms.objects.for_tenant(tenant).order_by("-created_at", "-id")[:limit]


def sms_of_subject(*, tenant: Tenant, e164: str, call_ids: Collection[str]) -> QuerySet[Sms]:
    """The SMS to a number, or of the calls (privacy_app's export and erasure)."""
    match = Q(call_id__in=list(call_ids)) if call_ids else Q(pk__in=[])
    if e164:
        match |= Q(to_e164=e164)
    return Sms.objects.for_tenant(tenant).filter(match)


def sms_json(sms: Sms) -> dict[str, Any]:
    return {"id": sms.pk, "to": sms.to_e164, "template": sms.template, "text": sms.text,
            "callId": sms.call_id or None, "provider": sms.provider or None, "providerId": sms.provider_id or None,
            "status": sms.status, "error": sms.error or None, "attempts": sms.attempts,
            "sendAt": _iso(sms.send_at), "sentAt": _iso(sms.sent_at), "createdAt": _iso(sms.created_at)}


def privacy_export(*, tenant: Tenant, e164: str, call_ids: Collection[str]) -> list[dict[str, Any]]:
    return [sms_json(sms) for sms in sms_of_subject(tenant=tenant, e164=e164, call_ids=call_ids)
            .order_by("created_at", "id")]


def _iso(moment: dt.datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None
