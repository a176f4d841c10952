"""Secrets of a tenant's third-party accounts that we must send as they are (a CalDAV
app password, a Graph client secret, a Cal.com API key): sealed (Fernet: AES-128-CBC
and HMAC-SHA256) under a key derived from SEALING_KEY (else SECRET_KEY) and the
purpose, so that a database copy alone reveals none of them. Rotating the key means
storing them again (docs/operations.md)."""
import base64
import json
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.utils.crypto import salted_hmac


@lru_cache(maxsize=16)
def _fernet(purpose: str, configured: str, secret_key: str) -> Fernet:
    digest = salted_hmac("console.sealing", purpose, secret=configured or secret_key, algorithm="sha256").digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def _of(purpose: str) -> Fernet:
    return _fernet(purpose, getattr(settings, "SEALING_KEY", ""), settings.SECRET_KEY)


def seal_values(values: dict[str, str], *, purpose: str) -> str:
    """`values` as one sealed text ("" for none)."""
    if not values:
        return ""
    return _of(purpose).encrypt(json.dumps(values, sort_keys=True).encode()).decode()


def unseal_values(sealed: str, *, purpose: str) -> dict[str, str]:
    """What `seal_values` sealed; {} when nothing is sealed or another key sealed it."""
    if not sealed:
        return {}
    try:
        values = json.loads(_of(purpose).decrypt(sealed.encode()).decode())
    except (InvalidToken, ValueError):
        return {}
    return {str(name): str(value) for name, value in values.items()} if isinstance(values, dict) else {}
