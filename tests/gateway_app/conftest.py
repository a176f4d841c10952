"""Fixtures of the gateway tests: the gateway token, per-lane settings, registry
documents with chat lanes, and fake providers on loopback (the only mocks: hosted
APIs are remote, so the tests stand them in with real HTTP servers on 127.0.0.1)."""
import copy
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.lanes.config import lane_variable
from registry_app.services import registry_load
from tests.conftest import make_client

GATEWAY_TOKEN = "gw-test-token-7f3a9c2e5b8d1046"
SHIPPED = json.loads(SHIPPED_DOCUMENT.read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def _gateway_defaults(mock_gateway):
    """Every gateway test starts from the documented defaults, whatever the environment says."""
    mock_gateway.GATEWAY_STATIC_TOKEN = GATEWAY_TOKEN


@pytest.fixture
def gateway(db):
    """A client with the gateway token."""
    return make_client(GATEWAY_TOKEN)


@pytest.fixture
def lane_settings(settings):
    """lane_settings("chat-x", key="…", endpoint="…"): the lane's GATEWAY_<KIND>_<LANE> settings."""
    def set_lane(lane_id, **kinds):
        for kind, value in kinds.items():
            settings.GATEWAY_LANE_SETTINGS[lane_variable(lane_id, kind.upper())] = value
    return set_lane


def chat_lane(lane_id, *, endpoint="", eur=0, priority=10, status="live", hosting=None, quality="mid",
              latency="fast", capability="chat", languages=("de", "en")):
    """A valid registry entry: self-hosted when free (unless `hosting` says otherwise), a
    hosted per-token API when paid (or unknown: eur None)."""
    hosting = hosting or ("self-hosted" if eur == 0 else "api")
    cost = ({"model": "self-hosted", "unit": "compute", "eur": 0} if hosting == "self-hosted"
            else {"model": "per-token", "unit": "1M tok", "eur": eur})
    return {
        "id": lane_id, "name": lane_id, "capability": capability, "provider": "Test", "hosting": hosting,
        "access": "ai-gateway" if hosting == "self-hosted" else "api-key", "endpoint": endpoint or "bridge:none",
        "health": None, "cost": cost, "status": status, "priority": priority, "quality_tier": quality,
        "latency_class": latency, "params": {"streaming": False, "languages": list(languages), "model": "test-model"},
        "test": "", "source": "", "notes": "",
    }


def load_lanes(*entries):
    """A registry whose lanes are `entries` (the shipped document's other fields)."""
    document = copy.deepcopy(SHIPPED)
    document["models"] = list(entries)
    registry_load(document=document, loaded_by="tests")
    return document


def load_document(document):
    registry_load(document=copy.deepcopy(document), loaded_by="tests")


class FakeProvider:
    """An OpenAI-compatible provider on loopback that answers (chat, `audio` for speech,
    `transcript`), fails (503), is slow (answers only when the test ends), answers 429,
    or answers garbage. It keeps every request it got."""

    def __init__(self, behaviour, text="Antwort vom Anbieter", usage=(11, 7), audio=b""):
        self.behaviour, self.text, self.usage, self.audio = behaviour, text, usage, audio
        self.requests = []  # (path, headers, parsed JSON body or raw bytes)
        self.release = threading.Event()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    parsed = json.loads(body)
                except ValueError:
                    parsed = body
                provider.requests.append((self.path, dict(self.headers), parsed))
                provider.answer(self)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/chat/completions"

    def chat_body(self):
        return json.dumps({"choices": [{"message": {"role": "assistant", "content": self.text}}],
                           "usage": {"prompt_tokens": self.usage[0], "completion_tokens": self.usage[1]}}).encode()

    def answer(self, handler):
        behaviour = self.behaviour
        if behaviour == "slow":
            self.release.wait(10)  # the gateway gives up long before; released at the end of the test
        status, body, headers = {
            "answer": (200, self.chat_body(), {"Content-Type": "application/json"}),
            "slow": (200, self.chat_body(), {"Content-Type": "application/json"}),
            "fail": (503, b'{"error": "overloaded"}', {"Content-Type": "application/json"}),
            "429": (429, b'{"error": "rate limited"}', {"Content-Type": "application/json", "Retry-After": "1"}),
            "garbage": (200, b"<html>not an answer</html>", {"Content-Type": "text/html"}),
            "audio": (200, self.audio, {"Content-Type": "audio/mpeg"}),
            "transcript": (200, json.dumps({"text": self.text}).encode(), {"Content-Type": "application/json"}),
        }[behaviour]
        try:
            handler.send_response(status)
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:
            pass  # the gateway stopped waiting (the slow provider)

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def provider():
    """provider("answer"|"fail"|"slow"|"429"|"garbage", text=…): a started FakeProvider."""
    started = []

    def start(behaviour, **kwargs):
        started.append(FakeProvider(behaviour, **kwargs))
        return started[-1]

    yield start
    for fake in started:
        fake.stop()


@pytest.fixture
def refused_url():
    """A loopback URL where nothing listens: the port was bound, then released."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/chat/completions"


def streaming_lane(lane_id, **kwargs):
    """chat_lane(...) whose registry entry says it streams (params.streaming)."""
    entry = chat_lane(lane_id, **kwargs)
    entry["params"]["streaming"] = True
    return entry


@pytest.fixture
def chat_server():
    """chat_server(Reply(...) | [Reply, …] | function): a started FakeChatServer
    (tests/openai_fake.py), stopped at the end of the test."""
    from tests.openai_fake import FakeChatServer

    started = []

    def start(replies, dialect="openai"):
        started.append(FakeChatServer(replies, dialect))
        return started[-1]

    yield start
    for fake in started:
        fake.stop()
