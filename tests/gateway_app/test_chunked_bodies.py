"""A body sent with `Transfer-Encoding: chunked` (no Content-Length) is read like any
other, within the same size limit, when the server hands the WSGI application the
decoded body (gunicorn: `wsgi.input_terminated`); a server that cannot gets 411 in
the contract's shape, never a body read as empty."""
import http.client
import io
import json
from urllib.parse import urlsplit

import pytest
from django.test.client import ClientHandler, RequestFactory

from console.parsers import JSONParser
from speech_app.decode import MAX_AUDIO_BYTES
from tests.conftest import error_of
from tests.gateway_app.conftest import GATEWAY_TOKEN
from tests.live_service import LiveService

AUTHORIZATION = f"Bearer {GATEWAY_TOKEN}"
NOT_AUDIO = b"this is no audio at all " * 40


class CountingInput(io.BytesIO):
    """wsgi.input that remembers how many bytes the application read."""

    def __init__(self, data):
        super().__init__(data)
        self.taken = 0

    def read(self, size=-1):
        chunk = super().read(size)
        self.taken += len(chunk)
        return chunk


def post_chunked_in_process(path, body, *, terminated=True, content_type="application/json"):
    """The request as the WSGI server hands it over: no CONTENT_LENGTH, the decoded body
    on wsgi.input (and `wsgi.input_terminated` when the server decoded the chunks)."""
    environ = RequestFactory()._base_environ(
        PATH_INFO=path, REQUEST_METHOD="POST", CONTENT_TYPE=content_type, HTTP_AUTHORIZATION=AUTHORIZATION,
        HTTP_TRANSFER_ENCODING="chunked")
    environ.pop("CONTENT_LENGTH", None)
    environ["wsgi.input"] = CountingInput(body)
    if terminated:
        environ["wsgi.input_terminated"] = True
    return handle(environ), environ["wsgi.input"]


def handle(environ):
    """Django's handler of the test client, without its client: the environ as it is."""
    response = ClientHandler(enforce_csrf_checks=False)(environ)
    response.json = lambda: json.loads(response.content)
    return response


@pytest.mark.parametrize("path, body, content_type", [
    ("/v1/agent", {"prompt": "ping"}, "application/json"),
    ("/v1/agent", {"prompt": "ping"}, "application/x-www-form-urlencoded"),  # curl -d … -H 'Transfer-Encoding: chunked'
    ("/agent", {"role": "trainee", "prompt": "ping"}, "application/json"),
])
def test_a_chunked_json_body_is_read(gateway, path, body, content_type):
    response, _ = post_chunked_in_process(path, json.dumps(body).encode(), content_type=content_type)
    assert response.status_code == 200, response.content[:300]
    assert response.json()["text"] == "pong"


def test_a_chunked_chat_completion_body_is_read(gateway):
    body = {"model": "auto", "messages": [{"role": "user", "content": "ping"}]}
    response, _ = post_chunked_in_process("/v1/chat/completions", json.dumps(body).encode())
    assert response.status_code == 200, response.content[:300]
    assert response.json()["choices"][0]["message"]["content"] == "pong"


def test_a_chunked_body_over_the_limit_is_413_and_read_no_further(gateway):
    limit = 256 * 1024
    body = b'{"prompt": "' + b"a" * (limit + 50_000) + b'"}'
    response, taken = post_chunked_in_process("/v1/agent", body)
    assert response.status_code == 413
    assert error_of(response) == {"code": "payload_too_large", "message": JSONParser.too_large(limit, None).message,
                                  "details": {"maxBytes": limit}}
    assert taken.taken == limit + 1


def test_a_chunked_audio_upload_is_read_within_the_audio_limit(gateway):
    response, _ = post_chunked_in_process("/v1/transcribe", NOT_AUDIO, content_type="audio/wav")
    # Read: the bytes are looked at (no audio), not taken for an empty body (400 empty_audio).
    assert response.status_code == 422 and error_of(response)["code"] == "undecodable_audio"
    response, taken = post_chunked_in_process("/v1/transcribe", b"\0" * (MAX_AUDIO_BYTES + 10))
    assert response.status_code == 413 and error_of(response)["code"] == "audio_too_large"
    assert taken.taken == MAX_AUDIO_BYTES + 1


@pytest.mark.parametrize("path", ["/v1/agent", "/v1/speak", "/agent", "/v1/transcribe"])
def test_a_server_that_cannot_decode_chunks_gets_411_in_json(gateway, path):
    response, taken = post_chunked_in_process(path, b'{"prompt": "ping"}', terminated=False)
    assert response.status_code == 411
    error = error_of(response)
    assert error["code"] == "length_required"
    assert "Content-Length" in error["message"]
    assert taken.taken == 0  # the raw stream is never read past its framing


def test_a_chunked_request_without_the_token_is_401_unread(gateway):
    environ = RequestFactory()._base_environ(PATH_INFO="/v1/agent", REQUEST_METHOD="POST",
                                             CONTENT_TYPE="application/json", HTTP_TRANSFER_ENCODING="chunked")
    environ.pop("CONTENT_LENGTH", None)
    environ["wsgi.input"], environ["wsgi.input_terminated"] = CountingInput(b'{"prompt": "ping"}'), True
    response = handle(environ)
    assert response.status_code == 401 and environ["wsgi.input"].taken == 0


# A real chunked request through gunicorn.

@pytest.fixture(scope="module")
def served(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("gateway-chunked"))
    live.env.update({"GATEWAY_STATIC_TOKEN": GATEWAY_TOKEN, "GATEWAY_MODE": "mock", "GATEWAY_MAX_EUR": "0"})
    try:
        live.migrate()
        base, _ = live.start()
        yield base
    finally:
        live.stop()


def post_chunked(base, path, chunks, content_type="application/json"):
    """POST with the body framed in chunks on the wire, as curl or a streaming client sends it."""
    address = urlsplit(base)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.putrequest("POST", path)
        for name, value in (("Authorization", AUTHORIZATION), ("Content-Type", content_type),
                            ("Transfer-Encoding", "chunked")):
            connection.putheader(name, value)
        connection.endheaders()
        for chunk in chunks:
            connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        connection.send(b"0\r\n\r\n")
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


@pytest.mark.slow
def test_gunicorn_serves_a_chunked_body_on_the_gateway_paths(served):
    status, headers, body = post_chunked(served, "/v1/agent", [b'{"prom', b'pt": "pi', b'ng"}'])
    assert status == 200, body[:300]
    assert json.loads(body)["text"] == "pong"

    status, _, body = post_chunked(served, "/agent", [b'{"role": "trainee", ', b'"prompt": "ping"}'],
                                   content_type="application/x-www-form-urlencoded")
    assert status == 200 and json.loads(body)["lane"] == "chat-gateway-mock", body[:300]

    status, _, body = post_chunked(served, "/v1/transcribe", [NOT_AUDIO[:100], NOT_AUDIO[100:]], "audio/wav")
    assert status == 422 and json.loads(body)["error"]["code"] == "undecodable_audio", body[:300]

    nested = b"[" * 990 + b"]" * 990
    status, headers, body = post_chunked(served, "/v1/speak", [nested[:700], nested[700:]])
    assert status == 400 and headers["Content-Type"] == "application/json"
    assert json.loads(body)["error"]["details"] == {"maxDepth": 32}
