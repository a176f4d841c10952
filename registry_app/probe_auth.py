"""The credential `probe_registry` sends to this service's own health paths.

The health paths of this service need a credential like every other path, and the
probe must not need a tenant's API key. So the probe derives a short-lived credential
from SECRET_KEY, which it shares with the server it probes (same deployment):
`probe.<unix time>.<HMAC-SHA256 of the time, base64url>`, valid for two minutes
either side of the server's clock. Nothing is stored; it is sent only to this
service's own base URL, never to another service's health URL; and it is accepted
only by the health views that list `ProbeAuthentication` (`/api/voice/health`,
`/v1/ready`), so it grants nothing but reading health.
"""
import base64
import hashlib
import hmac
import time

from django.conf import settings
from rest_framework import authentication, exceptions

PREFIX = "probe."
VALID_SECONDS = 120


def _mac(timestamp):
    # A key of its own, derived from SECRET_KEY, so the probe credential cannot be
    # confused with any other HMAC the project makes with SECRET_KEY.
    key = hmac.new(settings.SECRET_KEY.encode(), b"stimmwerk registry probe credential", hashlib.sha256).digest()
    digest = hmac.new(key, f"probe:{timestamp}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def probe_credential(now=None):
    timestamp = int(time.time() if now is None else now)
    return f"{PREFIX}{timestamp}.{_mac(timestamp)}"


def probe_credential_valid(value, now=None):
    if not value.startswith(PREFIX):
        return False
    timestamp, _, mac = value[len(PREFIX):].partition(".")
    if not (timestamp.isascii() and timestamp.isdigit()) or len(timestamp) > 12:
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > VALID_SECONDS:
        return False
    return hmac.compare_digest(mac.encode("utf-8", "replace"), _mac(int(timestamp)).encode())


class ServicePrincipal:
    """The principal of a request authenticated by a service credential rather than a
    Django user (the probe's here, the gateway token's in gateway_app)."""

    is_authenticated = True
    is_anonymous = False
    is_staff = False
    is_superuser = False
    is_active = True
    pk = None

    def __init__(self, username):
        self.username = username

    def __str__(self):
        return self.username


class ProbeAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer probe.…`; any other bearer value is left to the next
    authentication class (API keys look different)."""

    def authenticate(self, request):
        scheme, _, value = authentication.get_authorization_header(request).decode("latin-1").partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value.startswith(PREFIX):
            return None
        if not probe_credential_valid(value):
            raise exceptions.AuthenticationFailed("The probe credential is invalid or expired.")
        return ServicePrincipal("registry-probe"), None

    def authenticate_header(self, request):
        return 'Bearer realm="api"'
