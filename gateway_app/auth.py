"""`Authorization: Bearer <GATEWAY_STATIC_TOKEN>` (model-hub-registry §5), for /v1/* and /agent.

Only this token opens the gateway paths: an API key is not accepted there, and the
token is no API key, so it opens nothing under /v2. The comparison is of SHA-256
digests in constant time, so neither the token's content nor its length leaks
through timing. Without GATEWAY_STATIC_TOKEN every request is refused.
"""
import hashlib
import hmac

from django.conf import settings
from rest_framework import authentication, exceptions

from registry_app.probe_auth import ServicePrincipal


def token_matches(candidate):
    expected = settings.GATEWAY_STATIC_TOKEN
    if not expected:
        return False
    return hmac.compare_digest(hashlib.sha256(candidate.encode("utf-8", "replace")).digest(),
                               hashlib.sha256(expected.encode("utf-8")).digest())


# Every 401 of the gateway paths says so (docs/api.md), whichever credential was refused.
WWW_AUTHENTICATE = 'Bearer realm="gateway"'


class GatewayTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None  # DRF answers 401 "credentials were not provided"
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <gateway token>'.")
        if not token_matches(token.strip()):
            raise exceptions.AuthenticationFailed("The gateway token is invalid.")
        return ServicePrincipal("gateway-client"), None

    def authenticate_header(self, request):
        return WWW_AUTHENTICATE
