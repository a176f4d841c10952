"""A tool's receiver on loopback (allowed by OUTBOUND_ALLOW_PRIVATE_TARGETS in the test
settings only): answers each POST with the scripted answer, keeps what it got."""
import http.server
import threading

import pytest

from tools_app.services import http_tool_create


class ToolReceiver:
    def __init__(self):
        self.answers = [(200, b'{"frei": true}')]  # (status, body); the last one repeats
        self.requests = []  # (path, headers, body)
        self.hold = threading.Event()  # set: answer; unset with `slow`: never answers in time
        self.hold.set()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status, answer = receiver.answers[min(len(receiver.requests), len(receiver.answers)) - 1]
                receiver.hold.wait(10)
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "/elsewhere")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/tools/termin"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    found = ToolReceiver()
    yield found
    found.stop()


PARAMETERS = {"type": "object", "properties": {"datum": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$"}},
              "required": ["datum"], "additionalProperties": False}


@pytest.fixture
def tool_and_secret(tenant_a, receiver):
    return http_tool_create(tenant=tenant_a, data={"name": "termin_pruefen", "description": "Prüft einen Termin.",
                                                   "parameters": PARAMETERS, "url": receiver.url, "timeoutMs": 1000})
