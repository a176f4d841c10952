"""Stable pseudonyms of phone numbers, per tenant.

`anon-` and 11 characters of base32 (55 bits) of HMAC-SHA256(key, "<tenant id>:<E.164>"):
the same number gets the same pseudonym in a tenant (so an erased caller's calls still
count as one caller), another in every other tenant, and without the key nobody can
tell which number it was — not even by trying every number, which an unkeyed hash of
a phone number would allow. It fits the 16 characters of a number column and cannot
be mistaken for a number (letters, no `+`).
"""
import base64
import hashlib
import hmac

from django.conf import settings

PREFIX = "anon-"
LENGTH = 11


def pseudonym_key():
    """PRIVACY_PSEUDONYM_KEY, else a key derived from SECRET_KEY (set it in
    production: a new SECRET_KEY would give later erasures other pseudonyms)."""
    configured = settings.PRIVACY_PSEUDONYM_KEY
    if configured:
        return configured.encode()
    return hmac.new(settings.SECRET_KEY.encode(), b"stimmwerk.privacy.pseudonym", hashlib.sha256).digest()


def pseudonym_for(*, tenant, e164):
    digest = hmac.new(pseudonym_key(), f"{tenant.pk}:{e164}".encode(), hashlib.sha256).digest()
    return PREFIX + base64.b32encode(digest).decode().lower()[:LENGTH]
