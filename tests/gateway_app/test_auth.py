"""Every gateway path needs the gateway token; nothing else opens them, and the token
opens nothing else."""
import pytest

from tests.conftest import error_of, make_client
from tests.gateway_app.conftest import GATEWAY_TOKEN

GATEWAY_PATHS = [
    ("post", "/v1/agent", {"prompt": "ping"}),
    ("get", "/v1/ready", None),
    ("get", "/v1/usage", None),
    ("post", "/v1/speak", {"text": "Hallo"}),
    ("post", "/v1/transcribe", None),
    ("post", "/agent", {"role": "trainee", "prompt": "ping"}),
    ("post", "/v1/chat/completions", {"model": "auto", "messages": [{"role": "user", "content": "ping"}]}),
]
IDS = [path for _, path, _ in GATEWAY_PATHS]


def call(client, method, path, body):
    return getattr(client, method)(path, body, format="json") if body is not None else getattr(client, method)(path)


@pytest.mark.parametrize("method, path, body", GATEWAY_PATHS, ids=IDS)
@pytest.mark.parametrize("credential", [None, "wrong-token", GATEWAY_TOKEN + "x", GATEWAY_TOKEN[:-1], "Basic abc",
                                        "probe.1700000000.forged"])
def test_a_missing_or_wrong_token_is_401(db, method, path, body, credential):
    client = make_client()
    if credential == "Basic abc":
        client.credentials(HTTP_AUTHORIZATION=credential)
    elif credential:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {credential}")
    response = call(client, method, path, body)
    assert response.status_code == 401
    assert error_of(response)["code"] == "unauthenticated"
    # The gateway's own realm (docs/api.md), on /v1/ready too, which also takes the probe credential.
    assert response["WWW-Authenticate"] == 'Bearer realm="gateway"'


@pytest.mark.parametrize("method, path, body", GATEWAY_PATHS, ids=IDS)
def test_an_api_key_never_opens_the_gateway(api_a, method, path, body):
    assert call(api_a, method, path, body).status_code == 401


@pytest.mark.parametrize("method, path, body", GATEWAY_PATHS, ids=IDS)
def test_the_right_token_is_let_in(gateway, method, path, body):
    assert call(gateway, method, path, body).status_code != 401


@pytest.mark.parametrize("method, path, body", GATEWAY_PATHS, ids=IDS)
def test_without_a_configured_token_nobody_is_let_in(gateway, settings, method, path, body):
    settings.GATEWAY_STATIC_TOKEN = ""
    assert call(gateway, method, path, body).status_code == 401
    empty = make_client()
    empty.credentials(HTTP_AUTHORIZATION="Bearer ")
    assert call(empty, method, path, body).status_code == 401


@pytest.mark.parametrize("path", ["/v2/usage", "/v2/assistants", "/v2/registry", "/v2/registry/route?capability=chat",
                                  "/api/voice/health"])
def test_the_gateway_token_never_opens_the_v2_api_or_the_speech_module(gateway, tenant_a, path):
    client = make_client(GATEWAY_TOKEN, "acme")
    assert client.get(path).status_code == 401


def test_a_staff_session_does_not_open_the_gateway(client, owner):
    client.force_login(owner)
    assert client.post("/v1/agent", {"prompt": "ping"}, content_type="application/json").status_code == 401
