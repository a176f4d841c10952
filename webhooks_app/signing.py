"""Signing secrets of outbound webhooks and their Standard Webhooks signature.

Like the carriers' secrets (calls_app/signing.py), a secret is derived when needed,
never stored: secret = HMAC-SHA256(WEBHOOK_SIGNING_KEY, "<endpoint id>:<nonce>"),
shown as `whsec_<base64>`; the row keeps only the nonce. A rotation makes a new nonce
and keeps the previous one for WEBHOOK_SECRET_OVERLAP_SEC (24 h), during which every
delivery carries both signatures (`webhook-signature: v1,<new> v1,<old>`), as the
Standard Webhooks specification provides, so that a receiver can switch at its pace.
"""
import base64
import hashlib
import hmac
import secrets
from datetime import datetime, timezone

from django.conf import settings
from django.utils.crypto import salted_hmac
from standardwebhooks import Webhook


def new_nonce():
    return secrets.token_hex(16)


def _key():
    if settings.WEBHOOK_SIGNING_KEY:
        return settings.WEBHOOK_SIGNING_KEY.encode()
    return salted_hmac("webhooks_app.signing", "key", algorithm="sha256").digest()


def secret_for(endpoint_id, nonce):
    digest = hmac.new(_key(), f"{endpoint_id}:{nonce}".encode(), hashlib.sha256).digest()
    return "whsec_" + base64.b64encode(digest).decode()


def signing_secrets(endpoint, *, now):
    """The secrets a delivery is signed with now: the current one, and the previous
    one while its overlap lasts."""
    found = [secret_for(endpoint.pk, endpoint.secret_nonce)]
    if endpoint.previous_secret_nonce and endpoint.previous_secret_expires_at and now < endpoint.previous_secret_expires_at:
        found.append(secret_for(endpoint.pk, endpoint.previous_secret_nonce))
    return found


def headers_for(endpoint, *, msg_id, payload, now, timestamp):
    """The three Standard Webhooks headers of one attempt (`timestamp`: unix seconds)."""
    moment = datetime.fromtimestamp(timestamp, tz=timezone.utc)
    signatures = [Webhook(secret).sign(msg_id, moment, payload) for secret in signing_secrets(endpoint, now=now)]
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(timestamp)), "webhook-signature": " ".join(signatures)}
