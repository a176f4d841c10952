"""sipgate's SMS API on loopback: `POST /v2/sessions/sms` with `{"smsId", "recipient",
"message"}` and Basic auth (a personal access token's id and token), answered 204 as
sipgate does; a wrong token is 401, a body without the three fields 400. `requests`
keeps every request (path, auth, headers, JSON body); `fail = (status, body)`
answers every request so."""
import base64
import json
import threading
from typing import Any

from tests.twilio_fake import JsonAnswers, LoopbackServer


class FakeSipgate(LoopbackServer):
    def __init__(self, *, token_id: str, token: str) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fail: tuple[int, Any] | None = None
        self.lock = threading.Lock()
        expected = "Basic " + base64.b64encode(f"{token_id}:{token}".encode()).decode()
        fake = self

        class Handler(JsonAnswers):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with fake.lock:
                    fake.requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                                          "headers": dict(self.headers), "body": body})
                    fail = fake.fail
                if fail:
                    self.answer(*fail)
                elif self.path != "/v2/sessions/sms":
                    self.answer(404, {"message": "not found"})
                elif self.headers.get("Authorization") != expected:
                    self.answer(401, {"message": "unauthorized"})
                elif not isinstance(body, dict) or not all(isinstance(body.get(name), str)
                                                           for name in ("smsId", "recipient", "message")):
                    self.answer(400, {"message": "bad request"})
                else:
                    self.send_response(204)
                    self.send_header("Content-Length", "0")
                    self.end_headers()

        self._serve(Handler)
