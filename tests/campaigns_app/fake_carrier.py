"""Carriers of the campaign tests.

`KeyedCarrier` (in process) places one call per idempotency key, like a REST carrier
that honours `Idempotency-Key`, and can be told to time out after placing a call.
`FakeRestCarrier` is such a carrier as an HTTP server on loopback (`POST /calls`),
which can hold a request unanswered (the worker that sent it is then killed), and
`RestCarrierAdapter` the adapter that dials it with the attempt's key in the header.
"""
import json
import secrets
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from calls_app.carriers import Capabilities, SimCarrierAdapter


class KeyedCarrier:
    """The shared state of the in-process keyed carrier (reset by the tests)."""

    placed: dict[str, str] = {}  # idempotency key -> carrier call id
    requests: list[tuple[str, str]] = []  # every dial request: (key, to)
    active: set[str] = set()  # carrier call ids placed and not yet ended
    time_out_once: set[str] = set()  # keys whose first request places the call, then times out
    peak = 0
    lock = threading.Lock()

    @classmethod
    def reset(cls):
        cls.placed, cls.requests, cls.active, cls.time_out_once, cls.peak = {}, [], set(), set(), 0


class KeyedCarrierAdapter(SimCarrierAdapter):
    id = "keyed"
    capabilities = Capabilities(idempotent_dials=True)

    def dial(self, *, call, options):
        key = options.idempotency_key
        with KeyedCarrier.lock:
            KeyedCarrier.requests.append((key, call.to_e164))
            sid = KeyedCarrier.placed.get(key)
            if sid is None:
                sid = KeyedCarrier.placed[key] = f"KC{secrets.token_hex(8)}"
                KeyedCarrier.active.add(sid)
                KeyedCarrier.peak = max(KeyedCarrier.peak, len(KeyedCarrier.active))
            timing_out = key in KeyedCarrier.time_out_once
            KeyedCarrier.time_out_once.discard(key)
        if timing_out:
            raise TimeoutError("the carrier placed the call but its answer never came")
        return sid


class ForgetfulCarrierAdapter(KeyedCarrierAdapter):
    """A carrier that knows no idempotency keys: every request places a call."""

    id = "forgetful"
    capabilities = Capabilities(idempotent_dials=False)

    def dial(self, *, call, options):
        with KeyedCarrier.lock:
            sid = f"FC{secrets.token_hex(8)}"
            KeyedCarrier.requests.append((options.idempotency_key, call.to_e164))
            KeyedCarrier.placed.setdefault(options.idempotency_key, sid)
            timing_out = options.idempotency_key in KeyedCarrier.time_out_once
            KeyedCarrier.time_out_once.discard(options.idempotency_key)
        if timing_out:
            raise TimeoutError("no answer")
        return sid


class _LoopbackServer:
    """An HTTP server on loopback whose `Handler` (a BaseHTTPRequestHandler subclass
    built by the carrier) answers with `_JsonAnswers.answer`; `hold()` keeps the next
    new call's answer until `release()`."""

    def _serve(self, handler):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._release.set()
        self.server.shutdown()
        self.server.server_close()

    def hold(self):
        self._holding = True

    def release(self):
        self._release.set()


class _JsonAnswers(BaseHTTPRequestHandler):
    def answer(self, status, body):
        payload = json.dumps(body).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            pass  # the worker that asked is gone

    def log_message(self, *args):
        pass


class FakeRestCarrier(_LoopbackServer):
    """`POST /calls` with an `Idempotency-Key` header places one call per key and answers
    `{"sid"}`; `hold()` makes the next new call be placed but not answered until
    `release()` (the request's worker is killed meanwhile)."""

    def __init__(self):
        self.placed, self.requests = {}, []
        self.lock = threading.Lock()
        self.received = threading.Event()
        self._holding, self._release = False, threading.Event()
        carrier = self

        class Handler(_JsonAnswers):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = self.headers.get("Idempotency-Key", "")
                with carrier.lock:
                    carrier.requests.append((key, body))
                    new = key not in carrier.placed
                    if new:
                        carrier.placed[key] = f"CA{secrets.token_hex(8)}"
                hold = new and carrier._holding
                carrier.received.set()
                if hold:
                    carrier._holding = False
                    carrier._release.wait(60)
                self.answer(201, {"sid": carrier.placed[key]})

        self._serve(Handler)


class RestCarrierAdapter(SimCarrierAdapter):
    """Dials FakeRestCarrier at FAKE_CARRIER_URL with the attempt's key in the header."""

    id = "fakerest"
    capabilities = Capabilities(idempotent_dials=True)

    def dial(self, *, call, options):
        import os

        body = json.dumps({"To": call.to_e164, "From": call.from_e164, "TimeLimit": call.max_seconds,
                           "MachineDetection": "DetectMessageEnd" if options.machine_detection else ""}).encode()
        request = urllib.request.Request(os.environ["FAKE_CARRIER_URL"] + "/calls", data=body, method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "Idempotency-Key": options.idempotency_key})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())["sid"]


class FakeTwilioCalls(_LoopbackServer):
    """A Twilio-compatible carrier's Calls resource on loopback, as campaigns meet it.

    `POST …/Calls.json` places a call and answers its sid: a new sid for every request,
    since Twilio places a call per request whatever key it carries (the key, the
    `I-Twilio-Idempotency-Token` header, is recorded). The answer of a placed call can
    be lost: `lose_answers(n)` closes the connection of the next n dials without an
    answer after placing the call; `hold()` keeps the next dial's answer until
    `release()` (its worker is killed meanwhile); `refuse_unplaced(n)` closes the next n
    without placing anything (the request never reached the carrier). `POST
    …/Calls/<sid>.json` records the TwiML a live call was given (a hang-up, a voicemail).
    `active` holds the placed calls not yet ended (`end(sid)`), `peak` their most."""

    def __init__(self):
        self.dials, self.updates = [], []
        self.active, self.peak = set(), 0
        self.lock = threading.Lock()
        self.received = threading.Event()
        self._lose, self._unplaced, self._holding = 0, 0, False
        self._release = threading.Event()
        carrier = self

        class Handler(_JsonAnswers):
            def do_POST(self):  # noqa: N802
                from urllib.parse import parse_qs

                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                form = {name: values if len(values) > 1 else values[0] for name, values in parse_qs(body).items()}
                if not self.path.endswith("/Calls.json"):
                    with carrier.lock:
                        carrier.updates.append({"sid": self.path.rsplit("/", 1)[-1][:-len(".json")], "form": form})
                    return self.answer(200, {"sid": self.path.rsplit("/", 1)[-1][:-len(".json")]})
                with carrier.lock:
                    if carrier._unplaced:
                        carrier._unplaced -= 1
                        self.close_connection = True
                        return None
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
                    return None
                return self.answer(201, {"sid": sid, "status": "queued"})

        self._serve(Handler)

    def lose_answers(self, count=1):
        with self.lock:
            self._lose += count

    def refuse_unplaced(self, count=1):
        with self.lock:
            self._unplaced += count

    def end(self, sid):
        with self.lock:
            self.active.discard(sid)

    def dial_of(self, sid):
        with self.lock:
            return next(dial for dial in self.dials if dial["sid"] == sid)
