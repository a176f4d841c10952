"""Stable pseudonyms of phone numbers, per tenant.

`anon-` and 11 characters of base32 (55 bits) of HMAC-SHA256(key, "<tenant id>:<E.164>"):
the same number gets the same pseudonym in a tenant (so an erased caller's calls still
count as one caller), another in every other tenant, and without the key nobody can
tell which number it was — not even by trying every number, which an unkeyed hash of
a phone number would allow. It fits the 16 characters of a number column and cannot
be mistaken for a number (letters, no `+`).

Core, not privacy_app's: privacy_app writes the pseudonyms (erasures), and
campaigns_app, a layer below it, matches its blocklist by them, so that an erased
caller who objected to calls stays blocked (docs/privacy.md, docs/architecture.md).
Therefore the key must never change once an erasure was made: a new key would let
the campaigns call an erased objector again.
"""
import base64
import hashlib
import hmac

from django.conf import settings

PREFIX = "anon-"
LENGTH = 11


def pseudonym_key():
    """PRIVACY_PSEUDONYM_KEY, else a key derived from SECRET_KEY (set it in
    production: a new SECRET_KEY would give later erasures other pseudonyms, and
    erased entries of the blocklist would no longer match their numbers)."""
    configured = settings.PRIVACY_PSEUDONYM_KEY
    if configured:
        return configured.encode()
    return hmac.new(settings.SECRET_KEY.encode(), b"stimmwerk.privacy.pseudonym", hashlib.sha256).digest()


def pseudonym_for(*, tenant, e164):
    digest = hmac.new(pseudonym_key(), f"{tenant.pk}:{e164}".encode(), hashlib.sha256).digest()
    return PREFIX + base64.b32encode(digest).decode().lower()[:LENGTH]
