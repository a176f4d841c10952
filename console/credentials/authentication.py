from rest_framework import authentication, exceptions
from rest_framework.permissions import SAFE_METHODS

from console.credentials.services import KEY_SCHEME, api_key_authenticate


class ApiKeyUser:
    """The principal of a request authenticated by an API key (no Django user)."""

    is_authenticated = True
    is_anonymous = False
    is_staff = False
    is_superuser = False
    is_active = True

    def __init__(self, api_key):
        self.api_key = api_key
        self.pk = None
        self.username = f"api-key:{api_key.prefix}"

    def __str__(self):
        return self.username


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <api key>`; request.auth is the ApiKey."""

    keyword = "Bearer"

    def authenticate(self, request):
        # A read may use a key verified a moment ago; a write is checked against the database.
        return api_key_credentials(request._request, reuse_verified=request.method in SAFE_METHODS)

    def authenticate_header(self, request):
        return f'{self.keyword} realm="api"'


def api_key_credentials(request, *, reuse_verified=False, verified_only=False):
    """`(ApiKeyUser, ApiKey)` of the `Authorization: Bearer <api key>` of Django's
    `request`, None without the header, else AuthenticationFailed saying what to send.
    The one reading of the header; `verified_only` (console/verified_reads.py): a key
    verified a moment ago or None, never a query."""
    # The WSGI environ's text as it is (DRF's helper encodes it to latin-1 bytes, which
    # would only be decoded back here).
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header:
        misplaced = _misplaced_key_header(request)
        if misplaced:
            raise exceptions.AuthenticationFailed(
                f"An API key was sent in the {misplaced} header; send it as 'Authorization: Bearer <api key>'.")
        return None
    scheme, _, raw_key = header.partition(" ")
    raw_key = raw_key.strip()
    if scheme.lower() != ApiKeyAuthentication.keyword.lower() or not raw_key:
        sent = f"'{scheme} …'" if raw_key else "a value without a scheme"
        raise exceptions.AuthenticationFailed(f"The Authorization header must be 'Bearer <api key>'; it was {sent}.")
    api_key = api_key_authenticate(raw_key=raw_key, reuse_verified=reuse_verified, verified_only=verified_only)
    if api_key is None and not verified_only:
        raise exceptions.AuthenticationFailed("The API key is invalid or revoked.")
    return None if api_key is None else (ApiKeyUser(api_key), api_key)


KEY_PREFIX = f"{KEY_SCHEME}_"


def _misplaced_key_header(request):
    """The name of a header other than Authorization that carries an API key (X-API-Key,
    Api-Key, X-Auth-Token …), so that the 401 can name it."""
    for name, value in request.headers.items():
        if name.lower() != "authorization" and isinstance(value, str) and KEY_PREFIX in value[:16]:
            return name
    return None
