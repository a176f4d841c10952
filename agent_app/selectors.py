"""Reads of the voice agent's sessions for the privacy features (registered with
calls_app.call_data, see agent_app/apps.py); every query starts from the tenant."""
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast
from django.utils import timezone

from agent_app.models import AgentSession, Scenario, ScenarioRun
from console.tenants.models import Tenant


def agent_sessions_calls_naming(*, tenant: Tenant, pattern: str) -> list[str]:
    """Ids of the tenant's calls whose session's variables hold the number `pattern`
    finds (`console.phone.written_pattern`), in whatever form the caller gave it."""
    return list(AgentSession.objects.for_tenant(tenant).exclude(variables={})
                .annotate(variables_text=Cast("variables", TextField()))
                .filter(variables_text__regex=pattern).values_list("call_id", flat=True))


def agent_sessions_export(*, tenant: Tenant, call_ids: Iterable[str]) -> list[dict[str, Any]]:
    """What is kept of the sessions of those calls (never the token's digest)."""
    sessions = AgentSession.objects.for_tenant(tenant).filter(call_id__in=list(call_ids)).order_by("created_at", "id")
    return [{
        "sessionId": session.pk, "callId": session.call_id, "createdAt": _iso(session.created_at),
        "usedAt": _iso(session.used_at), "assistant": session.assistant_id or None, "language": session.language,
        "voice": session.voice or None, "variables": session.variables,
    } for session in sessions]


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def scenarios_kept(tenant: Tenant) -> int:
    """The tenant's scenarios (TENANT_MAX_SCENARIOS)."""
    return Scenario.objects.for_tenant(tenant).count()


def scenario_runs_today(tenant: Tenant) -> int:
    """The tenant's test runs of the last 24 hours (TENANT_MAX_SCENARIO_RUNS_PER_DAY)."""
    since = timezone.now() - timedelta(days=1)
    return ScenarioRun.objects.for_tenant(tenant).filter(created_at__gte=since).count()
