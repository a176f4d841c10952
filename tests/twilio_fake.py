"""Twilio's Calls resource on loopback, the one fake of it the tests share (the voice
agent's outbound and transfer tests, the campaigns' dials), and the loopback server it
is built on (tests/campaigns_app/fake_carrier.py builds its own REST carrier on it too).

`FakeTwilio` records every request (`requests`: path, form, auth, headers) and answers
as Twilio does: `POST …/Calls.json` places a call and answers 201 with a new sid (a
new one for every request, since Twilio places a call per request whatever key it
carries; the key, the `I-Twilio-Idempotency-Token` header, is recorded in `dials`);
`POST …/Messages.json` sends an SMS (issue 37 §4: recorded in `messages` with its
idempotency token, answered 201 with a new `SM…` sid, as Twilio's Messages API does);
`POST …/Calls/<sid>.json` records the TwiML a live call was given (`updates`) and
answers 200; `GET …/Accounts/<sid>.json` answers the account (the adapter's probe). `fail = (status, body)` answers every request so. The answer of a placed
call can be lost: `lose_answers(n)` closes the connection of the next n dials without
an answer after placing the call; `hold()` keeps the next dial's answer until
`release()`; `refuse_unplaced(n)` closes the next n without placing anything (the
request never reached the carrier). `active` holds the placed calls not yet ended
(`end(sid)`), `peak` their most; `wait_for(n)` waits for n requests."""
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (a free port) serving `handler` in a thread, as a
    context manager; `hold()` / `release()` for the carriers that keep an answer."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._holding, self._release = False, threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "LoopbackServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def hold(self) -> None:
        self._holding = True

    def release(self) -> None:
        self._release.set()


class JsonAnswers(BaseHTTPRequestHandler):
    def answer(self, status: int, body: Any) -> None:
        payload = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the worker that asked is gone

    def log_message(self, *args: Any) -> None:
        pass


class FakeTwilio(LoopbackServer):
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.dials: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.fail: tuple[int, Any] | None = None
        self.active: set[str] = set()
        self.peak = 0
        self.lock = threading.Condition()
        self.received = threading.Event()
        self._lose, self._unplaced = 0, 0
        carrier = self

        class Handler(JsonAnswers):
            def do_GET(self) -> None:  # noqa: N802 (the account itself: what the adapter's probe reads)
                with carrier.lock:
                    carrier.requests.append({"path": self.path, "method": "GET",
                                             "auth": self.headers.get("Authorization"), "headers": dict(self.headers)})
                    carrier.lock.notify_all()
                    fail = carrier.fail
                account = self.path.rsplit("/", 1)[-1].removesuffix(".json")
                self.answer(*(fail or (200, {"sid": account, "status": "active"})))

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                form = {name: values if len(values) > 1 else values[0] for name, values in parse_qs(body).items()}
                with carrier.lock:
                    carrier.requests.append({"path": self.path, "form": form,
                                             "auth": self.headers.get("Authorization"), "headers": dict(self.headers)})
                    carrier.lock.notify_all()
                    fail = carrier.fail
                if fail:
                    self.answer(*fail)
                    return
                if self.path.endswith("/Messages.json"):
                    sid = f"SM{secrets.token_hex(16)}"
                    with carrier.lock:
                        carrier.messages.append({"sid": sid, "path": self.path, "form": form,
                                                 "key": self.headers.get("I-Twilio-Idempotency-Token", "")})
                    self.answer(201, {"sid": sid, "status": "queued", "to": form.get("To"), "from": form.get("From"),
                                      "body": form.get("Body")})
                    return
                if not self.path.endswith("/Calls.json"):
                    sid = self.path.rsplit("/", 1)[-1].removesuffix(".json")
                    with carrier.lock:
                        carrier.updates.append({"sid": sid, "form": form})
                    self.answer(200, {"sid": sid, "status": "in-progress"})
                    return
                with carrier.lock:
                    if carrier._unplaced:
                        carrier._unplaced -= 1
                        self.close_connection = True
                        return
                    sid = f"CA{secrets.token_hex(16)}"
                    carrier.dials.append({"sid": sid, "form": form,
                                          "key": self.headers.get("I-Twilio-Idempotency-Token", "")})
                    carrier.active.add(sid)
                    carrier.peak = max(carrier.peak, len(carrier.active))
                    lose = carrier._lose > 0
                    carrier._lose -= lose
                    hold, carrier._holding = carrier._holding, False
                carrier.received.set()
                if hold:
                    carrier._release.wait(60)
                if lose:
                    self.close_connection = True  # placed, and the answer never comes
                    return
                self.answer(201, {"sid": sid, "status": "queued"})

        self._serve(Handler)

    def wait_for(self, count: int, timeout: float = 30) -> bool:
        """Whether `count` requests came within `timeout` seconds."""
        with self.lock:
            return self.lock.wait_for(lambda: len(self.requests) >= count, timeout)

    def lose_answers(self, count: int = 1) -> None:
        with self.lock:
            self._lose += count

    def refuse_unplaced(self, count: int = 1) -> None:
        with self.lock:
            self._unplaced += count

    def end(self, sid: str) -> None:
        with self.lock:
            self.active.discard(sid)

    def dial_of(self, sid: str) -> dict[str, Any]:
        with self.lock:
            return next(dial for dial in self.dials if dial["sid"] == sid)
