"""Writes of messaging_app (docs/api.md, "SMS"): the tenant's provider, and SMS — each
one a record, sent at most once.

- The provider `carrier` (the default) is no account of its own: for each SMS it stands
  for the provider `twilio` with the SMS's call's carrier and the tenant's number of
  that call as the sender (`_sending_settings`), where the carrier's kind sends SMS
  (`CarrierKind.sms`); else the SMS is refused (`sms_carrier_cannot_send`). The SMS
  keeps its call, so a reminder sent a day later finds the same carrier.

- `sms_send` makes the record: only to the caller's own number (read from the call,
  never given), only a German mobile number, never one on the campaigns' blocklist,
  within the tenant's cap per day (`TENANT_MAX_SMS_PER_DAY`); a second request with the
  same key is the same SMS. Due now, it is queued as a job; with `send_at` (a reminder)
  the periodic `sms_due_send` sends it when due.
- `sms_deliver` claims a queued SMS under its row lock (so two workers never both
  send it), checks the blocklist again (a caller may have objected since), transmits
  it (messaging_app.providers) and records the outcome. Only an SMS that surely never
  reached the provider is tried again (MESSAGING_MAX_ATTEMPTS); one whose answer never
  came is `failed`, never sent twice.
"""
import datetime as dt
import logging
import zoneinfo
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from calls_app.kinds import KINDS
from calls_app.kinds.twilio import NAME as TWILIO
from calls_app.models import Call, Carrier
from calls_app.signing import seal
from campaigns_app.selectors import blocklist_entries_for
from console import outbound
from console.errors import ApiError, ValidationFailed
from console.jobs.services import job_enqueue_on_commit
from console.numbers.models import PhoneNumber
from console.quotas import quota_take
from console.tenants.models import Tenant
from messaging_app import providers, selectors, texts
from messaging_app.errors import (
    MessagingNotConfigured,
    MessagingUrlRefused,
    SmsCarrierCannotSend,
    SmsNoCaller,
    SmsNotMobile,
    SmsNumberBlocked,
)
from messaging_app.models import MessagingSettings, Sms
from webhooks_app import signing

logger = logging.getLogger("messaging_app")

DELIVER = "messaging_app.services.sms_deliver"
MAX_KEY = 200
WEEKDAYS = ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag")
MONTHS = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
          "November", "Dezember")


def messaging_settings_apply(*, tenant: Tenant, config: MessagingSettings, data: Mapping[str, Any]) -> None:
    """Puts `data` (the model's names, plus `sipgate_token`) on the unsaved `config` and
    checks that the chosen provider has what it needs (a 400 where not)."""
    for name in ("provider", "sipgate_token_id", "sipgate_sms_id", "sender_e164", "webhook_url"):
        if name in data:
            setattr(config, name, data[name] or "")
    if data.get("sipgate_token"):
        config.sipgate_token_sealed = seal(data["sipgate_token"])
    if "twilio_carrier" in data:
        config.twilio_carrier = _twilio_carrier(data["twilio_carrier"])
    if "templates" in data:
        config.templates = texts.templates_checked(data["templates"])
    _check(tenant, config)


@transaction.atomic
def messaging_settings_update(*, tenant: Tenant, data: Mapping[str, Any]) -> tuple[MessagingSettings, str | None]:
    """Changes the tenant's provider (`data` as for messaging_settings_apply, plus
    `rotate_secret`); returns the settings and the webhook's signing secret where a new
    one was made (shown once), else None."""
    # The tenant's row first: two first changes at once insert one row, not two.
    Tenant.objects.select_for_update(no_key=True).filter(pk=tenant.pk).first()
    config = selectors.messaging_settings_for(tenant=tenant)
    was_webhook = config.provider == MessagingSettings.Provider.WEBHOOK and bool(config.secret_nonce)
    messaging_settings_apply(tenant=tenant, config=config, data=data)
    secret = None
    if config.provider == MessagingSettings.Provider.WEBHOOK and (not was_webhook or data.get("rotate_secret")):
        if config.secret_nonce:
            config.previous_secret_nonce = config.secret_nonce
            config.previous_secret_expires_at = timezone.now() + timedelta(
                seconds=settings.WEBHOOK_SECRET_OVERLAP_SEC if data.get("rotate_secret") else 0)
        config.secret_nonce = signing.new_nonce()
        secret = signing.secret_for(config.pk, config.secret_nonce)
    config.save()
    return config, secret


def _twilio_carrier(carrier_id: object) -> Carrier | None:
    if carrier_id in (None, ""):
        return None
    carrier = Carrier.objects.filter(pk=carrier_id, kind=TWILIO).first() if isinstance(carrier_id, str) else None
    if carrier is None:
        raise ValidationFailed.field("twilioCarrier", gettext("No Twilio carrier '%(carrier)s'.") % {"carrier": carrier_id})
    return carrier


def _check(tenant: Tenant, config: MessagingSettings) -> None:
    """What the chosen provider needs is there."""
    provider = config.provider
    if provider == MessagingSettings.Provider.SIPGATE:
        if not config.sipgate_token_id or not config.sipgate_token_sealed:
            raise ValidationFailed.field("sipgateToken", gettext("sipgate needs the token id and the token."))
        if not config.sipgate_sms_id:
            raise ValidationFailed.field("sipgateSmsId", gettext("sipgate needs the SMS extension (e.g. s0)."))
    elif provider == MessagingSettings.Provider.TWILIO:
        if config.twilio_carrier is None:
            raise ValidationFailed.field("twilioCarrier", gettext("twilio needs a Twilio carrier."))
        if not PhoneNumber.objects.for_tenant(tenant).filter(e164=config.sender_e164).exists():
            raise ValidationFailed.field("senderE164", gettext("The sender must be one of the tenant's own numbers."))
    elif provider == MessagingSettings.Provider.WEBHOOK:
        if not config.webhook_url:
            raise ValidationFailed.field("webhookUrl", gettext("webhook needs an https URL."))
        outbound.url_admit(config.webhook_url, refused=MessagingUrlRefused)


def caller_number(call: Call) -> str:
    """The other party of the call: the caller of an inbound call, the called of an outbound one."""
    return (call.to_e164 if call.direction == "outbound" else call.from_e164) or ""


def tenant_number(call: Call) -> str:
    """The tenant's own number of the call: the one the caller called (inbound), the one
    shown to the called (outbound)."""
    return (call.from_e164 if call.direction == "outbound" else call.to_e164) or ""


def _sending_settings(config: MessagingSettings, *, tenant: Tenant, call_id: str,
                      call: Call | None = None) -> MessagingSettings:
    """How an SMS of the call `call_id` leaves: `config` itself, or for the provider
    `carrier` the settings it stands for on this call (unsaved): `twilio` through the
    call's own carrier, from the tenant's number of the call. Raises
    SmsCarrierCannotSend where that carrier's kind sends no SMS (or the call is gone)."""
    if config.provider != MessagingSettings.Provider.CARRIER:
        return config
    if call is None and call_id:
        call = Call.objects.for_tenant(tenant).select_related("carrier").filter(pk=call_id).first()
    kind = KINDS.get(call.carrier.kind) if call is not None else None
    if call is None or kind is None or not kind.sms or not tenant_number(call):
        raise SmsCarrierCannotSend()
    return MessagingSettings(tenant=tenant, provider=MessagingSettings.Provider.TWILIO, twilio_carrier=call.carrier,
                             sender_e164=tenant_number(call), templates=config.templates)


def _recipient(config: MessagingSettings, *, tenant: Tenant, call_id: str) -> tuple[Call, MessagingSettings, str]:
    """(the call, how its SMS leave, the number they go to); the refusal when none may."""
    if not config.provider:
        raise MessagingNotConfigured()
    call = Call.objects.for_tenant(tenant).select_related("carrier").filter(pk=call_id).first()
    if call is None:
        raise ValidationFailed.field("callId", f"No call '{call_id}' in this tenant.")
    sending = _sending_settings(config, tenant=tenant, call_id=call.pk, call=call)
    number = caller_number(call)
    if not number:
        raise SmsNoCaller()
    if not texts.is_german_mobile(number):
        raise SmsNotMobile()
    if blocklist_entries_for(tenant=tenant, e164=number).exists():
        raise SmsNumberBlocked()
    return call, sending, number


def sms_possible(*, tenant: Tenant, call_id: str) -> bool:
    """Whether an SMS to the other party of the call `call_id` could leave now (a
    provider, a carrier that sends SMS, a German mobile number not blocked), so that
    `send_sms` is offered only where it can be kept (the day's cap aside)."""
    try:
        _recipient(selectors.messaging_settings_for(tenant=tenant), tenant=tenant, call_id=call_id)
    except ApiError:
        return False
    return True


def sms_send(*, tenant: Tenant, call_id: str, template: str, variables: Mapping[str, object], key: str,
             send_at: dt.datetime | None = None) -> Sms:
    """The SMS of template `template` to the caller of the tenant's call `call_id`, now
    or at `send_at`. The same `key` again returns the SMS made first (sent once). With
    the provider `carrier`, a call whose carrier sends no SMS is refused here
    (SmsCarrierCannotSend), before anything is counted or stored."""
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY:
        raise ValidationFailed.field("key", f"A key of 1 to {MAX_KEY} characters.")
    with transaction.atomic():
        existing = Sms.objects.for_tenant(tenant).filter(key=key).first()
        if existing is not None:
            return existing
        config = selectors.messaging_settings_for(tenant=tenant)
        call, sending, number = _recipient(config, tenant=tenant, call_id=call_id)
        text = texts.sms_text(templates=config.templates, name=template,
                              variables={"business": tenant.name, **variables})
        quota_take(tenant=tenant, name="smsPerDay")
        # After the tenant's lock: a request with the same key that was first has committed.
        existing = Sms.objects.for_tenant(tenant).filter(key=key).first()
        if existing is not None:
            return existing
        now = timezone.now()
        sms = Sms.objects.create(tenant=tenant, key=key, call_id=call.pk, to_e164=number, template=template,
                                 text=text, provider=sending.provider, send_at=max(send_at or now, now))
        if sms.send_at <= now:
            job_enqueue_on_commit(DELIVER, kwargs={"sms_id": sms.pk})
    return sms


def german_date(moment: dt.datetime) -> str:
    return f"{WEEKDAYS[moment.weekday()]}, {moment.day}. {MONTHS[moment.month - 1]}"


def sms_reminder_schedule(*, tenant: Tenant, call_id: str, starts_at: dt.datetime, key: str,
                          variables: Mapping[str, object] | None = None) -> Sms | None:
    """The reminder of an appointment at `starts_at`, sent the day before at the same
    time (template `reminder`; `date` and `time` on the tenant's clock unless given);
    None where that moment has passed (an appointment within a day needs none)."""
    send_at = starts_at - timedelta(days=1)
    if send_at <= timezone.now():
        return None
    local = starts_at.astimezone(zoneinfo.ZoneInfo(tenant.time_zone))
    values = {"date": german_date(local), "time": local.strftime("%H:%M"), **(variables or {})}
    return sms_send(tenant=tenant, call_id=call_id, template="reminder", variables=values, key=key, send_at=send_at)


def sms_cancel(*, sms: Sms) -> bool:
    """Cancels an SMS not yet sent (a moved or cancelled appointment's reminder)."""
    return bool(Sms.objects.filter(pk=sms.pk, status=Sms.Status.QUEUED).update(status=Sms.Status.CANCELLED))


def _claim(sms_id: str) -> tuple[Sms, MessagingSettings] | None:
    """The due, queued SMS, now `sending` (None where another worker has it, it was
    sent, or it is not due); cancelled instead where its number was blocked since."""
    with transaction.atomic():
        sms = Sms.objects.select_for_update().select_related("tenant").filter(
            pk=sms_id, status=Sms.Status.QUEUED, send_at__lte=timezone.now()).first()
        if sms is None:
            return None
        config = selectors.messaging_settings_for(tenant=sms.tenant)
        if blocklist_entries_for(tenant=sms.tenant, e164=sms.to_e164).exists():
            sms.status, sms.error = Sms.Status.CANCELLED, "The number is on the blocklist."
        elif not config.provider:
            sms.status, sms.error = Sms.Status.FAILED, "No messaging provider is chosen."
        else:
            try:
                config = _sending_settings(config, tenant=sms.tenant, call_id=sms.call_id)
            except SmsCarrierCannotSend as exc:
                sms.status, sms.error = Sms.Status.FAILED, exc.message
            else:
                sms.status, sms.provider, sms.attempts = Sms.Status.SENDING, config.provider, sms.attempts + 1
        sms.save(update_fields=["status", "provider", "attempts", "error"])
        return (sms, config) if sms.status == Sms.Status.SENDING else None


def sms_deliver(*, sms_id: str) -> str:
    """Sends the SMS if it is due and nobody sent it; returns its status afterwards."""
    claimed = _claim(sms_id)
    if claimed is None:
        return Sms.objects.filter(pk=sms_id).values_list("status", flat=True).first() or "missing"
    sms, config = claimed
    try:
        sms.provider_id = providers.sms_transmit(config, sms)
        sms.status, sms.sent_at, sms.error = Sms.Status.SENT, timezone.now(), ""
    except providers.SendFailed as exc:
        sms.error = exc.error
        if exc.unsent and sms.attempts < settings.MESSAGING_MAX_ATTEMPTS:
            # Never reached the provider: the periodic sweep tries it again.
            sms.status = Sms.Status.QUEUED
            sms.send_at = timezone.now() + timedelta(seconds=settings.MESSAGING_RETRY_SEC * 2 ** (sms.attempts - 1))
        else:
            sms.status = Sms.Status.FAILED
        logger.warning("SMS %s of tenant %s not sent: %s", sms.pk, sms.tenant_id, exc.error)
    Sms.objects.filter(pk=sms.pk, status=Sms.Status.SENDING).update(
        status=sms.status, provider_id=sms.provider_id, sent_at=sms.sent_at, error=sms.error, send_at=sms.send_at)
    return sms.status


def sms_due_send() -> int:
    """The periodic job: sends the queued SMS that are due (reminders, retries); returns
    how many it sent."""
    due = list(Sms.objects.filter(status=Sms.Status.QUEUED, send_at__lte=timezone.now())
               .order_by("send_at").values_list("pk", flat=True)[:settings.MESSAGING_SWEEP_BATCH])
    return sum(sms_deliver(sms_id=sms_id) == Sms.Status.SENT for sms_id in due)


def sms_erase(*, tenant: Tenant, e164: str, call_ids: list[str]) -> int:
    """Deletes the SMS to `e164` or of the calls (an erasure, privacy_app); returns how many."""
    return selectors.sms_of_subject(tenant=tenant, e164=e164, call_ids=call_ids).delete()[1].get(
        Sms._meta.label, 0)
