"""Carrier signing secrets and the webhook signature (CONTRACT §5).

`X-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`; the
HMAC key is the UTF-8 bytes of the secret as `create_carrier` printed it.

Storage decision: the HMAC needs the secret itself, so a hash cannot be kept. Instead
of storing the secret (or an encryption of it), it is derived when needed:
secret = base64url(HMAC-SHA256(CARRIER_SIGNING_KEY, "<carrier id>:<nonce>")), and
only the random nonce is in the database. A database copy alone reveals no secret;
rotating a carrier's secret means a new nonce. CARRIER_SIGNING_KEY defaults to a key
derived from SECRET_KEY; set it explicitly so that SECRET_KEY can be rotated without
re-issuing every carrier secret.
"""
import base64
import hashlib
import hmac
import re
import secrets
import time
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.utils.crypto import salted_hmac

from calls_app.errors import InvalidSignature, StaleSignature

# Room for a timestamp and a few v1 values (carriers send two while rotating).
MAX_HEADER_LENGTH = 1024
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
# CONTRACT §5: a signature more than this far from now is refused (replays).
TOLERANCE_SECONDS = 300


def new_nonce():
    return secrets.token_hex(16)


def _signing_key():
    return _signing_key_of(getattr(settings, "CARRIER_SIGNING_KEY", ""), settings.SECRET_KEY)


@lru_cache(maxsize=8)
def _signing_key_of(configured, secret_key):
    if configured:
        return configured.encode()
    return salted_hmac("calls_app.carrier-signing-key", "v1", secret=secret_key, algorithm="sha256").digest()


def carrier_secret(carrier):
    """The carrier's secret: 43 URL-safe characters (256 bits)."""
    return secret_of(carrier.id, carrier.secret_nonce)


def secret_of(carrier_id, nonce):
    """The secret of the carrier `carrier_id` whose current nonce is `nonce`.

    Derived once per process and (carrier, nonce, signing key): the webhook reads the
    nonce on every event, so a rotation (a new nonce) takes effect at once in every
    worker, and a changed CARRIER_SIGNING_KEY or SECRET_KEY too."""
    return _derived_secret(carrier_id, nonce, _signing_key())


@lru_cache(maxsize=1024)
def _derived_secret(carrier_id, nonce, signing_key):
    digest = hmac.new(signing_key, f"{carrier_id}:{nonce}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def signature_header(secret, body, timestamp=None):
    """What a carrier sends: used by the sim carrier and by tests."""
    timestamp = int(time.time()) if timestamp is None else int(timestamp)
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify_signature(secret, header, body, *, now=None):
    """Raises InvalidSignature or StaleSignature unless `header` signs `body`."""
    timestamp, candidates = _parse_header(header or "")
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    # Every v1 is compared (carriers may send two while rotating); constant time each.
    if not any(hmac.compare_digest(expected, candidate) for candidate in candidates):
        raise InvalidSignature()
    now = time.time() if now is None else now
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise StaleSignature(f"The signature timestamp is more than {TOLERANCE_SECONDS} seconds away from now.")


def _parse_header(header):
    """(timestamp, [v1 values]) of an `X-Signature` header, or InvalidSignature.

    A header is whatever the client sent, decoded as Latin-1: anything that is not
    short printable ASCII (`t=²`, `v1=é`, `t=` with thousands of digits, which int()
    refuses) is refused here, before any arithmetic or comparison."""
    if len(header) > MAX_HEADER_LENGTH or not header.isascii():
        raise InvalidSignature()
    timestamp, candidates = None, []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and _TIMESTAMP.fullmatch(value):
            timestamp = int(value)
        elif name == "v1" and value:
            candidates.append(value.strip().lower())
    if timestamp is None or not candidates:
        raise InvalidSignature()
    return timestamp, candidates


# --- Sealed credentials of carriers --------------------------------------------------------
# A carrier's own credentials (a Twilio account's auth token, a SIP account's password)
# are the carrier's, not ours: they cannot be derived like the secrets above, so the
# fields its kind declares are kept as one JSON object encrypted (Fernet: AES-128-CBC
# and HMAC-SHA256) under a key derived from the same signing key
# (calls_app/kinds/credentials.py). A database copy alone reveals none of them;
# rotating CARRIER_SIGNING_KEY (or SECRET_KEY, where it is derived from it) means
# storing them again (`create_carrier ID --rotate --auth-token …`, or the admin's form).
# The key's label stays the one it had when only a token was sealed, so that what is
# stored keeps opening.

def _sealing_key():
    digest = hmac.new(_signing_key(), b"calls_app.carrier-token-seal:v1", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest)


def seal(text):
    return Fernet(_sealing_key()).encrypt(text.encode()).decode()


def unseal(sealed):
    """The sealed text, or "" when it cannot be opened (another key sealed it)."""
    try:
        return Fernet(_sealing_key()).decrypt(sealed.encode()).decode()
    except (InvalidToken, ValueError):
        return ""
