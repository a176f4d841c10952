"""Carriers of the campaign tests.

`KeyedCarrier` (in process) places one call per idempotency key, like a REST carrier
that honours `Idempotency-Key`, and can be told to time out after placing a call.
`FakeRestCarrier` is such a carrier as an HTTP server on loopback (`POST /calls`),
which can hold a request unanswered (the worker that sent it is then killed), and
`RestCarrierAdapter` the adapter that dials it with the attempt's key in the header.
A Twilio-compatible carrier's REST API is tests/twilio_fake.py's `FakeTwilio`.
"""
import json
import secrets
import threading
import urllib.request

from calls_app.carriers import Capabilities, SimCarrierAdapter
from tests.twilio_fake import JsonAnswers, LoopbackServer


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


class FakeRestCarrier(LoopbackServer):
    """`POST /calls` with an `Idempotency-Key` header places one call per key and answers
    `{"sid"}`; `hold()` makes the next new call be placed but not answered until
    `release()` (the request's worker is killed meanwhile)."""

    def __init__(self):
        self.placed, self.requests = {}, []
        self.lock = threading.Lock()
        self.received = threading.Event()
        carrier = self

        class Handler(JsonAnswers):
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
