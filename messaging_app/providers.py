"""The three ways an SMS leaves (docs/api.md, "SMS"), each one bounded POST through
`webhooks_app.transport` (console.outbound's SSRF guard) to a URL admitted by
`console.outbound.url_admit`:

- `sipgate`: `POST <MESSAGING_SIPGATE_API_BASE>/v2/sessions/sms` with
  `{"smsId", "recipient", "message"}` and the personal access token as Basic auth; 204.
- `twilio`: `POST <api base>/2010-04-01/Accounts/<sid>/Messages.json`, the form
  `To`, `From`, `Body` (as twilio's client sends it), Basic auth with the account's SID
  and token, `I-Twilio-Idempotency-Token` the SMS's id; the answer's `sid` is kept.
- `webhook`: the tenant's endpoint gets `{"type": "sms.send", "id", "to", "text",
  "template", "callId"}` signed by the Standard Webhooks scheme (`webhook-id` the SMS's
  id, so a receiver drops a repeat); an answer's `{"id": …}` is kept.

The default provider `carrier` has no request of its own: messaging_app.services turns
it, per SMS, into `twilio` with the SMS's call's carrier and the tenant's number of that
call as the sender (where the carrier's kind sends SMS), so the same `twilio_request`
serves both.

`SendFailed.unsent` is true where the request surely never reached the provider (the
connection failed, or it was refused before it was made): only such an SMS is tried
again, so none is sent twice."""
import base64
import json
import time
import urllib.parse
from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone

from calls_app.kinds.credentials import credentials_of
from calls_app.kinds.twilio import API_BASE as TWILIO_API_BASE
from calls_app.signing import unseal
from console import outbound
from console.errors import ApiError
from messaging_app.errors import MessagingUrlRefused
from messaging_app.models import MessagingSettings, Sms
from webhooks_app import signing, transport

USER_AGENT = "Stimmwerk-SMS/1"
MAX_ANSWER = 16 * 1024


class SendFailed(Exception):
    def __init__(self, error: str, *, unsent: bool = False) -> None:
        super().__init__(error)
        self.error, self.unsent = error[:300], unsent


@dataclass(frozen=True)
class Request:
    url: str
    body: bytes
    headers: dict[str, str]


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def sipgate_request(config: MessagingSettings, sms: Sms) -> Request:
    token = unseal(config.sipgate_token_sealed) if config.sipgate_token_sealed else ""
    if not token:
        raise SendFailed("The sipgate token cannot be opened: enter it again.", unsent=True)
    body = json.dumps({"smsId": config.sipgate_sms_id, "recipient": sms.to_e164, "message": sms.text},
                      ensure_ascii=False).encode()
    return Request(settings.MESSAGING_SIPGATE_API_BASE.rstrip("/") + "/v2/sessions/sms", body,
                   {"Authorization": _basic(config.sipgate_token_id, token), "Content-Type": "application/json",
                    "Accept": "application/json"})


def twilio_request(config: MessagingSettings, sms: Sms) -> Request:
    carrier = config.twilio_carrier
    credentials = credentials_of(carrier) if carrier is not None else {}
    account, token = credentials.get("account_sid", ""), credentials.get("auth_token", "")
    if not account or not token:
        raise SendFailed("The Twilio carrier's credentials cannot be opened.", unsent=True)
    base = (credentials.get("api_base") or TWILIO_API_BASE).rstrip("/")
    body = urllib.parse.urlencode({"To": sms.to_e164, "From": config.sender_e164, "Body": sms.text}).encode()
    return Request(f"{base}/2010-04-01/Accounts/{urllib.parse.quote(account)}/Messages.json", body,
                   {"Authorization": _basic(account, token), "Content-Type": "application/x-www-form-urlencoded",
                    "Accept": "application/json", "I-Twilio-Idempotency-Token": sms.id})


def webhook_request(config: MessagingSettings, sms: Sms) -> Request:
    payload = json.dumps({"type": "sms.send", "id": sms.id, "to": sms.to_e164, "text": sms.text,
                          "template": sms.template, "callId": sms.call_id or None},
                         separators=(",", ":"), ensure_ascii=False)
    headers = signing.headers_for(config, msg_id=sms.id, payload=payload, now=timezone.now(), timestamp=time.time())
    return Request(config.webhook_url, payload.encode(), {**headers, "Content-Type": "application/json"})


REQUESTS = {"sipgate": sipgate_request, "twilio": twilio_request, "webhook": webhook_request}


def _provider_id(content: bytes, field: str) -> str:
    try:
        answer = json.loads(content or b"{}")
    except ValueError:
        return ""
    value = answer.get(field) if isinstance(answer, dict) else None
    return value[:200] if isinstance(value, str) else ""


def sms_transmit(config: MessagingSettings, sms: Sms) -> str:
    """Sends `sms` through the tenant's provider; returns the provider's id of it ("" where
    it names none). Raises SendFailed."""
    if config.provider not in REQUESTS:
        raise SendFailed("No messaging provider is chosen.", unsent=True)
    request = REQUESTS[config.provider](config, sms)
    try:
        outbound.url_admit(request.url, refused=MessagingUrlRefused)
    except ApiError as exc:
        reasons = [str(reason) for reasons in exc.details.values() for reason in reasons] or [exc.message]
        raise SendFailed(f"refused: {'; '.join(reasons)}", unsent=True) from None
    answer = transport.post(request.url, body=request.body, timeout=settings.MESSAGING_TIMEOUT_SEC,
                            headers={**request.headers, "User-Agent": USER_AGENT},
                            allow_private=settings.OUTBOUND_ALLOW_PRIVATE_TARGETS, read_limit=MAX_ANSWER)
    if not answer.ok:
        unsent = answer.status is None and answer.error.startswith(("refused", outbound.CONNECTION_FAILED))
        raise SendFailed(f"{config.provider}: {answer.error}", unsent=unsent)
    return _provider_id(answer.content, "sid" if config.provider == "twilio" else "id")
