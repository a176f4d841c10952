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
from calls_app import phone_calls
from calls_app import services as calls
from calls_app.kinds import WEB_TRANSPORT, kind_of_transport
from calls_app.phone_calls import Call, Carrier  # their types (the agent writes no call itself)
from calls_app.warm_transfers import Resumed, warm_dialplan_resume
from campaigns_app.selectors import contact_variables_of_call
from console.assistants.models import Assistant
from console.assistants.selectors import assistant_answering, assistant_of_call
from console.numbers.models import PhoneNumber
from console.tenants.models import Tenant


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def agent_session_create(*, tenant: Tenant, assistant_id: str = "", language: str | None = None,
                         variables: dict[str, Any] | None = None, encoding: str = "pcm_s16le",
                         sample_rate: int = 16000, max_minutes: int | None = None,
                         now: datetime | None = None, test: bool = False) -> tuple[AgentSession, str]:
    """A new session: checks the minute cap and reserves minutes like an outbound call
    (402 minute_cap_reached), at most `max_minutes` if given, and issues its single-use
    token. Returns (session, token); the token is shown once and only its digest is kept. A
    `test` session (the admin's browser test) is a test call: no cap, no minutes booked."""
    now = now or timezone.now()
    agent_sessions_expire(tenant=tenant, now=now)
    voice, assistant = "", None
    if assistant_id:
        # Its effective config: the latest published version, else the draft.
        assistant = assistant_answering(assistant=Assistant.objects.for_tenant(tenant).filter(pk=assistant_id).first())
        if assistant is None:  # another tenant's assistant answers like none
            raise UnknownAssistant(details={"assistant": [UnknownAssistant.message]})
        language, voice = language or assistant.language, assistant.voice
    # Without one named, the tenant's first assistant answers (agent_app.mind): its
    # tools, transfer targets, greeting and analysis apply to the call.
    answering = assistant or assistant_answering(assistant=assistant_of(tenant=tenant))
    # The opening can be spoken (400 missing_variables).
    opening(tenant=tenant, variables=variables or {}, assistant=answering)
    call = calls.call_request_web(tenant=tenant, max_minutes=max_minutes, now=now, assistant=answering, test=test)
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
def agent_session_claim(*, token: object, now: datetime | None = None, transport: str = WEB_TRANSPORT,
                        carrier_id: str | None = None, carrier_call_id: str | None = None) -> AgentSession | None:
    """The session of `token` if the token is unused, unexpired and of this transport
    (a phone call's token opens no browser session, nor the reverse), and, for a phone
    call's stream, of the call `carrier_call_id` of the carrier `carrier_id`: now marked
    used (one conditional UPDATE, so two connections with one token cannot both win);
    else None. A call that ended already (the carrier hung up first) is never claimed,
    so nothing is spoken into it. An expired token's call is ended on the spot. A phone call starts here
    (`call.started`)."""
    now = now or timezone.now()
    if not isinstance(token, str) or not 20 <= len(token) <= 100:
        return None
    digest = token_digest(token)
    mine = AgentSession.objects.filter(token_digest=digest, transport=transport)
    if carrier_id is not None:
        mine = mine.filter(call__carrier_id=carrier_id, call__carrier_call_id=carrier_call_id)
    claimed = mine.filter(used_at__isnull=True, expires_at__gt=now, call__ended_at__isnull=True).update(used_at=now)
    session = mine.select_related("tenant", "call").first()
    if session is None:
        return None
    if not claimed:
        if session.used_at is None:
            calls.call_web_end(call_id=session.call_id, now=now)
        return None
    if transport == WEB_TRANSPORT:
        calls.call_web_start(call_id=session.call_id, now=now)
    else:
        phone_calls.call_phone_start(call_id=session.call_id, now=now)
    session.call.refresh_from_db(fields=["started_at", "status"])
    return session


def agent_session_resume(*, token: object, transport: str) -> tuple[AgentSession, Resumed] | None:
    """The session of a phone call's `token` (an AudioSocket call's UUID) whose caller
    comes back after its dialplan's unanswered warm hand-over, once
    (calls_app.warm_transfers.warm_dialplan_resume); None for any other token or state."""
    if not isinstance(token, str) or not 20 <= len(token) <= 100:
        return None
    session = (AgentSession.objects.filter(token_digest=token_digest(token), transport=transport,
                                           used_at__isnull=False).select_related("tenant", "call").first())
    if session is None:
        return None
    resumed = warm_dialplan_resume(call_id=session.call_id)
    if resumed is None:
        return None
    session.call.refresh_from_db()
    return session, resumed


# --- Phone calls (docs/telephony.md) ------------------------------------------------------

@transaction.atomic
def phone_call_register(*, carrier: Carrier, number: PhoneNumber, carrier_call_id: str, from_e164: str,
                        to_e164: str, transport: str, token: str | None = None,
                        now: datetime | None = None) -> tuple[Call, str]:
    """An inbound phone call to `number` (a tenant's): the cap checked and the grant
    reserved, the call created, and the grant of its conversation, whose single-use
    token (shown once: for twilio the stream's parameter, for AudioSocket the UUID)
    expires after AGENT_TOKEN_TTL_SEC. The number's assistant answers, else the
    tenant's first (agent_app.mind), as on a web call: its tools, transfer targets and
    analysis apply. Returns (call, token); MinuteCapReached when nothing is left
    (nothing stored then: see phone_call_reject)."""
    now = now or timezone.now()
    tenant = number.tenant
    agent_sessions_expire(tenant=tenant, now=now)
    answering = _answering(number)
    call = phone_calls.call_request_phone(carrier=carrier, tenant=tenant, carrier_call_id=carrier_call_id,
                                          from_e164=from_e164, to_e164=to_e164, assistant=answering, now=now)
    return call, _phone_session(call, answering, transport, token, now)


def _answering(number: PhoneNumber) -> Assistant | None:
    """The effective config that answers `number`: its assistant's pinned version, else
    its latest published, else its draft (console.assistants.selectors)."""
    if number.assistant is not None:
        return assistant_answering(assistant=number.assistant, pinned=number.assistant_version)
    return assistant_answering(assistant=assistant_of(tenant=number.tenant))


def phone_call_reject(*, carrier: Carrier, number: PhoneNumber, carrier_call_id: str, from_e164: str,
                      to_e164: str) -> Call:
    """The call the cap refused, recorded as `rejected` with 0 seconds."""
    return phone_calls.call_reject_phone(carrier=carrier, tenant=number.tenant, carrier_call_id=carrier_call_id,
                                         from_e164=from_e164, to_e164=to_e164, assistant=_answering(number))


@transaction.atomic
def phone_call_answer(*, call: Call, transport: str, now: datetime | None = None) -> str | None:
    """A new token for a call whose conversation has not begun: a carrier that asks
    again (a retried webhook), or the callee of an outbound call answering. None when
    its conversation began or the call ended."""
    now = now or timezone.now()
    if call.is_ended:
        return None
    session = AgentSession.objects.filter(call=call).first()
    if session is not None and session.used_at is not None:
        return None
    token = secrets.token_urlsafe(32)
    if session is None:
        # The callee of an outbound call: the call's assistant answers (a campaign's; see
        # calls_app.services.call_request_outbound), with the campaign contact's
        # variables for its scripts.
        ran_with = assistant_of_call(assistant=call.assistant, version=call.assistant_version) if call.assistant else None
        _phone_session(call, ran_with, transport, token, now,
                       variables=contact_variables_of_call(call_id=call.pk))
    else:
        AgentSession.objects.filter(pk=session.pk, used_at__isnull=True).update(
            token_digest=token_digest(token), expires_at=now + timedelta(seconds=settings.AGENT_TOKEN_TTL_SEC))
    return token


def _phone_session(call: Call, assistant: Assistant | None, transport: str, token: str | None,
                   now: datetime, variables: dict[str, str] | None = None) -> str:
    token = token or secrets.token_urlsafe(32)
    encoding, sample_rate = kind_of_transport(transport).wire
    AgentSession.objects.create(
        tenant=call.tenant, call=call, token_digest=token_digest(token), transport=transport,
        expires_at=now + timedelta(seconds=settings.AGENT_TOKEN_TTL_SEC),
        assistant_id=assistant.pk if assistant else "", language=(assistant.language if assistant else "") or "de",
        voice=assistant.voice if assistant else "", variables=variables or {}, encoding=encoding,
        sample_rate=sample_rate,
    )
    return token


def phone_call_of_token(*, carrier: Carrier, token: str, transport: str) -> str | None:
    """The call id of `token` (an AudioSocket call's UUID) of `transport` and `carrier`,
    or None: another carrier's secret reads nothing of its calls."""
    return (AgentSession.objects.filter(token_digest=token_digest(token), call__carrier=carrier, transport=transport)
            .values_list("call_id", flat=True).first())


def phone_transfer_target(*, carrier: Carrier, token: str, transport: str) -> str | None:
    """The number the call of `token` (an AudioSocket call's UUID) of `transport` was
    handed over to, or "" (an Asterisk dialplan reads it back after AudioSocket()
    returned). None when the token is no call of `carrier`: another carrier's secret
    reads nothing of its calls."""
    session = AgentSession.objects.filter(token_digest=token_digest(token), call__carrier=carrier,
                                          transport=transport).first()
    return phone_calls.call_transfer_target(call_id=session.call_id) if session else None


def agent_sessions_expire_all(*, now: datetime | None = None) -> int:
    """The periodic job: ends the calls of every tenant's grants whose token expired
    unused (a phone call whose stream never came). Returns how many tenants it looked at."""
    now = now or timezone.now()
    tenants = set(AgentSession.objects.filter(used_at__isnull=True, expires_at__lte=now,
                                              call__ended_at__isnull=True).values_list("tenant_id", flat=True))
    for tenant in Tenant.objects.filter(pk__in=tenants):
        agent_sessions_expire(tenant=tenant, now=now)
    return len(tenants)


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
