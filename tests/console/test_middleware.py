"""The session, login-user and messages middleware are left out for API requests that
cannot use a login session, and leaving them out changes no response."""
import pytest
from django.contrib.sessions.middleware import SessionMiddleware as DjangoSessionMiddleware
from django.test import Client

from console.engines import engine_probes
from tests.conftest import make_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("gateway_token")]

GATEWAY_TOKEN = "gw-middleware-test-token-5c1e"

DJANGO_MIDDLEWARE = {
    "console.middleware.SessionMiddleware": "django.contrib.sessions.middleware.SessionMiddleware",
    "console.middleware.AuthenticationMiddleware": "django.contrib.auth.middleware.AuthenticationMiddleware",
    "console.middleware.MessageMiddleware": "django.contrib.messages.middleware.MessageMiddleware",
}


@pytest.fixture
def sessions_loaded(monkeypatch):
    """Counts the requests for which the session middleware ran."""
    calls = []
    original = DjangoSessionMiddleware.process_request

    def counting(self, request):
        calls.append(request.path_info)
        return original(self, request)

    monkeypatch.setattr(DjangoSessionMiddleware, "process_request", counting)
    return calls


@pytest.fixture
def gateway_token(settings):
    settings.GATEWAY_STATIC_TOKEN = GATEWAY_TOKEN


def exchanges(key_a, owner):
    """Requests of every kind on the API paths (the gateway's and the speech module's
    too), and one of the admin."""
    logged_in = make_client(tenant="acme")
    logged_in.force_login(owner)
    logged_in_with_key = make_client(key_a, "acme")
    logged_in_with_key.force_login(owner)
    return [
        ("health", Client(), "get", "/health"),
        ("key", make_client(key_a, "acme"), "get", "/v2/usage"),
        ("wrong key", make_client("swk_000000000000_" + "x" * 43, "acme"), "get", "/v2/usage"),
        ("no credentials", make_client(tenant="acme"), "get", "/v2/usage"),
        ("session", logged_in, "get", "/v2/assistants"),
        ("session and key", logged_in_with_key, "get", "/v2/assistants"),
        ("webhook", Client(), "post", "/voice/webhook/nobody"),
        ("unknown API path", make_client(key_a), "get", "/v2/nothing-here"),
        ("gateway", Client(HTTP_AUTHORIZATION=f"Bearer {GATEWAY_TOKEN}"), "get", "/v1/usage"),
        ("gateway without token", Client(), "get", "/v1/usage"),
        ("cloud agent", Client(HTTP_AUTHORIZATION=f"Bearer {GATEWAY_TOKEN}"), "get", "/agent"),
        ("speech module", make_client(key_a), "get", "/api/voice/health"),
        ("speech module, session", logged_in, "get", "/api/voice/health"),
        ("transcribe with a key", make_client(key_a, "acme"), "post", "/v2/audio/transcribe"),
        ("admin", logged_in, "get", "/admin/"),
    ]


def answer(response):
    if response["Content-Type"].startswith("text/html"):  # the admin's page has a fresh CSRF token each time
        return response.status_code, response["Content-Type"]
    headers = dict(response.items())
    assert headers.pop("X-Request-Id")  # every request has its own (console/request_log.py)
    return response.status_code, headers, response.content, sorted(response.cookies)


@pytest.fixture
def engines_held_still(monkeypatch):
    """Each engine probe answers what it answered first: a probe still warming up (Whisper's,
    on a busy machine) must not change /health's answer between the two rounds."""
    first = {engine_id: probe() for engine_id, probe in engine_probes.probes.items()}
    monkeypatch.setattr(engine_probes, "probes", {engine_id: (lambda status=status: status)
                                                  for engine_id, status in first.items()})


def test_responses_are_those_of_djangos_own_middleware(settings, tenant_a, key_a, owner, engines_held_still):
    ours = [answer(getattr(client, method)(path)) for _name, client, method, path in exchanges(key_a, owner)]
    settings.MIDDLEWARE = [DJANGO_MIDDLEWARE.get(name, name) for name in settings.MIDDLEWARE]
    djangos = [answer(getattr(client, method)(path)) for _name, client, method, path in exchanges(key_a, owner)]
    names = [name for name, *_ in exchanges(key_a, owner)]
    assert dict(zip(names, ours, strict=True)) == dict(zip(names, djangos, strict=True))


def test_the_session_is_left_out_only_where_it_cannot_be_used(tenant_a, key_a, owner, sessions_loaded):
    for _name, client, method, path in exchanges(key_a, owner):
        getattr(client, method)(path)
    # With a key or the gateway token (whatever the path), /health and the webhook: no
    # session. Without one on the API paths, where a login may authenticate the request
    # (or the gateway refuses it), and in the admin: the session.
    assert sessions_loaded == ["/v2/usage", "/v2/assistants", "/v1/usage", "/api/voice/health", "/admin/"]
