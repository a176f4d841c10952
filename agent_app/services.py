"""Writes of the voice agent: granting sessions, claiming their token, and the call
they are recorded as (through calls_app's services, the only writer of calls)."""
import hashlib
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agent_app.conversation import opening
from agent_app.errors import UnknownAssistant
from agent_app.mind import assistant_of
from agent_app.models import AgentSession
from calls_app import services as calls
from console.assistants.models import Assistant
from console.tenants.models import Tenant


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def agent_session_create(*, tenant: Tenant, assistant_id: str = "", language: str | None = None,
                         variables: dict[str, Any] | None = None, encoding: str = "pcm_s16le",
                         sample_rate: int = 16000, max_minutes: int | None = None,
                         now: datetime | None = None) -> tuple[AgentSession, str]:
    """A new session: checks the minute cap and reserves minutes like an outbound call
    (402 minute_cap_reached), at most `max_minutes` if given, and issues its single-use
    token. Returns (session, token); the token is shown once and only its digest is kept."""
    now = now or timezone.now()
    agent_sessions_expire(tenant=tenant, now=now)
    voice, assistant = "", None
    if assistant_id:
        assistant = Assistant.objects.for_tenant(tenant).filter(pk=assistant_id).first()
        if assistant is None:  # another tenant's assistant answers like none
            raise UnknownAssistant(details={"assistant": [UnknownAssistant.message]})
        language, voice = language or assistant.language, assistant.voice
    opening(tenant=tenant, variables=variables or {})  # the opening can be spoken (400 missing_variables)
    # Without one named, the tenant's first assistant answers (agent_app.mind): its
    # tools, transfer targets and analysis apply to the call.
    answering = assistant or assistant_of(tenant=tenant)
    call = calls.call_request_web(tenant=tenant, max_minutes=max_minutes, now=now, assistant=answering)
    token = secrets.token_urlsafe(32)
    session = AgentSession.objects.create(
        tenant=tenant, call=call, token_digest=token_digest(token),
        expires_at=now + timedelta(seconds=settings.AGENT_TOKEN_TTL_SEC), assistant_id=assistant_id or "",
        language=language or "de", voice=voice, variables=variables or {}, encoding=encoding,
        sample_rate=sample_rate,
    )
    return session, token


def agent_sessions_expire(*, tenant: Tenant, now: datetime | None = None) -> None:
    """Ends the calls of the tenant's sessions whose token expired unused (canceled, 0 s),
    which gives their reserved minutes back."""
    now = now or timezone.now()
    expired = AgentSession.objects.for_tenant(tenant).filter(
        used_at__isnull=True, expires_at__lte=now, call__ended_at__isnull=True).values_list("call_id", flat=True)
    for call_id in list(expired):
        calls.call_web_end(call_id=call_id, now=now)


@transaction.atomic
def agent_session_claim(*, token: object, now: datetime | None = None) -> AgentSession | None:
    """The session of `token` if the token is unused and unexpired, now marked used (one
    conditional UPDATE, so two connections with one token cannot both win); else None.
    An expired token's call is ended on the spot."""
    now = now or timezone.now()
    if not isinstance(token, str) or not 20 <= len(token) <= 100:
        return None
    digest = token_digest(token)
    claimed = AgentSession.objects.filter(token_digest=digest, used_at__isnull=True, expires_at__gt=now).update(
        used_at=now)
    session = AgentSession.objects.select_related("tenant", "call").filter(token_digest=digest).first()
    if session is None:
        return None
    if not claimed:
        if session.used_at is None:
            calls.call_web_end(call_id=session.call_id, now=now)
        return None
    calls.call_web_start(call_id=session.call_id, now=now)
    session.call.refresh_from_db(fields=["started_at", "status"])
    return session


# --- The privacy features' part (calls_app.call_data, registered in apps.py) ------------

@transaction.atomic
def agent_sessions_erase(*, tenant: Tenant, call_ids: Iterable[str]) -> int:
    """Erasure: the sessions of those calls keep no variables (what the caller or the
    page gave: names, numbers). Returns how many sessions had any. A session still
    under way keeps its opening as spoken; nothing is read from the row afterwards."""
    return (AgentSession.objects.for_tenant(tenant).filter(call_id__in=list(call_ids)).exclude(variables={})
            .update(variables={}))


@transaction.atomic
def agent_sessions_purge(*, tenant: Tenant, created_before: datetime) -> int:
    """Retention (the transcript period): deletes the sessions of ended calls created
    before the moment; their calls stay. Returns how many."""
    old = AgentSession.objects.for_tenant(tenant).filter(call__created_at__lt=created_before,
                                                         call__ended_at__isnull=False)
    return old.delete()[1].get(AgentSession._meta.label, 0)
