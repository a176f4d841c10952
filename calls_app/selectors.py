"""Reads of calls and usage; every query starts from the tenant."""
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.utils import timezone

from calls_app.models import Call, SipRegistration, TranscriptEntry, TurnLatency, UsageCounter
from calls_app.periods import next_period_start, period_of
from console.listing import Read
from console.tenants.models import Tenant

# The transcript lines of a page of calls (`GET /v2/calls`), written as TranscriptEntrySerializer
# would: the one part of the call list not derived from its serializer (calls_app.serializers.CALLS).
# One variant per number of calls (the IN list has a parameter per call).
_transcript_rows = Read(TranscriptEntry, ("call_id", "role", "text", "ts"), by=["call_id__in"], ordering=("ts", "id"),
                       of_tenant=False, datetimes_as_text=True)


def transcript_lines(*, call_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The transcript lines of these calls (whose rows the caller read from its tenant),
    by call id, in order: {"role", "text", "ts"} with the timestamp as the API writes
    it. One query (none for no calls)."""
    lines: dict[str, list[dict[str, Any]]] = {}
    if not call_ids:
        return lines
    for call_id, role, text, ts in _transcript_rows(*call_ids):
        lines.setdefault(call_id, []).append({"role": role, "text": text, "ts": ts})
    return lines


def outbound_call_get(*, tenant: Tenant, call_id: str) -> Call:
    return Call.objects.for_tenant(tenant).get(pk=call_id, direction=Call.Direction.OUTBOUND)


def call_was_refused(*, tenant: Tenant, call_id: str) -> bool:
    """Whether the carrier refused to dial the call (services.call_dial failed it)."""
    return Call.objects.for_tenant(tenant).filter(
        pk=call_id, status=Call.Status.FAILED, carrier_call_id__isnull=True, started_at__isnull=True,
    ).exists()


# The counter of one month (unique per tenant and period), or no row: nothing booked yet.
_month_counter = Read(UsageCounter, ("minutes", "seconds", "reserved_minutes"), by=["period"])


def usage_for(*, tenant: Tenant, now: datetime | None = None) -> dict[str, Any]:
    """The usage record of the tenant's current month (CONTRACT §5): one row read."""
    now = now or timezone.now()
    period = period_of(now, tenant.time_zone)
    minutes, seconds, reserved_minutes = next(iter(_month_counter(tenant.id, period)), (0, 0, 0))
    remaining = max(0, tenant.minute_cap - minutes - reserved_minutes)
    return {
        "tenant": tenant.slug,
        "period": period,
        "minutesThisMonth": minutes,
        "secondsThisMonth": seconds,
        "minuteCap": tenant.minute_cap,
        "reservedMinutes": reserved_minutes,
        "remainingMinutes": remaining,
        "resetsAt": next_period_start(now, tenant.time_zone).isoformat().replace("+00:00", "Z"),
    }


def caller_number(*, call_id: str) -> str:
    """The caller's number of a call (E.164), or "" when it has none (a web call of the
    voice agent) or it was erased (a pseudonym is no number)."""
    row = Call.objects.filter(pk=call_id).values_list("direction", "from_e164", "to_e164").first()
    if row is None:
        return ""
    direction, from_e164, to_e164 = row
    number = to_e164 if direction == Call.Direction.OUTBOUND else from_e164
    return number if number.startswith("+") else ""


# The stages of a reply, as TurnLatency's columns name them.
LATENCY_STAGES = ("end_of_turn", "recognition", "thinking", "synthesis")


def call_latency(*, call: Call) -> dict[str, Any] | None:
    """How fast the voice agent answered in `call` (a call the caller's tenant already
    chose): {"turns", "p50_ms", "p90_ms", "max_ms", "median_ms": {stage: ms}} over its
    replies, or None for a call without any. Percentiles are nearest-rank (the value
    at rank ⌈q·n⌉, so always a measured one)."""
    rows = list(TurnLatency.objects.filter(call_id=call.pk).values_list(
        "total_ms", *(f"{stage}_ms" for stage in LATENCY_STAGES)))
    if not rows:
        return None
    columns = [sorted(column) for column in zip(*rows, strict=True)]
    totals = columns[0]
    return {"turns": len(rows), "p50_ms": _rank(totals, 0.5), "p90_ms": _rank(totals, 0.9), "max_ms": totals[-1],
            "median_ms": {stage: _rank(column, 0.5) for stage, column in zip(LATENCY_STAGES, columns[1:],
                                                                             strict=True)}}


def _rank(ordered: Sequence[int], share: float) -> int:
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def sip_registration_states() -> dict[str, dict[str, str]]:
    """What the SIP agent last wrote of each `sip` carrier, by carrier id: `state`
    (registered, registering, failing, static) and `reason` (the trunk's last answer)."""
    return {row["carrier_id"]: {"id": row["carrier_id"], "state": row["state"], "reason": row["reason"]}
            for row in SipRegistration.objects.values("carrier_id", "state", "reason")}
