"""A speech server on loopback that speaks the OpenAI audio API's wire format, as the
self-hosted servers remote speech lanes point at do (a faster-whisper server, a
Kokoro or Piper server): `POST /v1/audio/speech` (JSON in, WAV out) and `POST
/v1/audio/transcriptions` (multipart/form-data in, `verbose_json` out).

It can also misbehave the ways a real one does: fail (500), be slow (it answers only
when the test ends: the client's timeout is what is under test), answer the wrong
content type, answer MP3 although WAV was asked, stream its WAV with an unknown
length, or answer without end (`huge` announces a gigabyte, `endless` announces
nothing) — then it counts what it managed to send before the client hung up.
"""
import copy
import email.parser
import email.policy
import io
import json
import threading
import wave

import pytest

from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.services import registry_load
from tests.gateway_app.conftest import FakeProvider
from tests.speech_app.audio_samples import encode, tone, wav_file

SHIPPED = json.loads(SHIPPED_DOCUMENT.read_text(encoding="utf-8"))
RATE = 24000  # Kokoro's and OpenAI's rate
SECONDS_PER_CHARACTER = 0.02
_CHUNK = b"\0" * 65536
_MOST = 1 << 30  # what a misbehaving server offers at most


def tone_wav(seconds, rate=RATE, streamed=False):
    """A 16-bit mono WAV of a tone; `streamed`: its lengths written as 0xFFFFFFFF, as a
    server does that sends the WAV while it is still being made."""
    data = wav_file(tone(seconds, rate=rate, hz=220), rate=rate)
    if streamed:
        data = data[:4] + b"\xff\xff\xff\xff" + data[8:40] + b"\xff\xff\xff\xff" + data[44:]
    return data


def form_fields(content_type, body):
    """{name: [values]} of a multipart/form-data body, parsed as the standard library
    parses MIME; the file's value is its bytes."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    fields = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        value = part.get_payload(decode=True)
        fields.setdefault(name, []).append(value if part.get_filename() else value.decode())
    return fields


class SpeechServer(FakeProvider):
    """The gateway tests' provider on loopback (its server, its request log, its
    release at the end), answering the OpenAI audio API instead of chat."""

    def __init__(self, behaviour="ok", *, text="Guten Tag", language="de", fail_after=None):
        self.language, self.fail_after = language, fail_after
        self.finished = threading.Event()  # a huge answer's writing has stopped
        self.sent = 0  # bytes of a huge answer written before the client hung up
        super().__init__(behaviour, text=text)

    @property
    def url(self):
        """The server's base, as an operator writes it into the lane's endpoint."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def _normal(self, handler, parsed):
        if handler.path.endswith("/audio/speech"):
            seconds = max(0.2, SECONDS_PER_CHARACTER * len(parsed["input"]))
            if self.behaviour == "mp3":
                return 200, encode(tone_wav(seconds)[44:], RATE, "mp3"), "audio/mpeg"
            return 200, tone_wav(seconds, streamed=self.behaviour == "streamed"), "audio/wav"
        with wave.open(io.BytesIO(parsed["file"][0])) as wav:
            duration = wav.getnframes() / wav.getframerate()
        words = self.text.split()
        step = duration / max(len(words), 1)
        answer = {
            "task": "transcribe", "language": self.language, "duration": duration, "text": self.text,
            "segments": [{"id": 0, "seek": 0, "start": 0.0, "end": duration, "text": " " + self.text,
                          "tokens": [50364], "temperature": 0.0, "avg_logprob": -0.25, "compression_ratio": 1.2,
                          "no_speech_prob": 0.01, "words": None}],
            "words": [{"start": n * step, "end": (n + 1) * step, "word": " " + word, "probability": 0.875}
                      for n, word in enumerate(words)],
        }
        return 200, json.dumps(answer).encode(), "application/json"

    def answer(self, handler):
        # The request as it was logged: a JSON object, or the raw multipart body, parsed here.
        path, headers, parsed = self.requests[-1]
        if handler.headers.get_content_type() == "multipart/form-data":
            parsed = form_fields(handler.headers["Content-Type"], parsed)
            self.requests[-1] = (path, headers, parsed)
        behaviour = self.behaviour
        if behaviour == "slow":
            self.release.wait(30)
        if behaviour in ("huge", "endless"):
            return self._without_end(handler, announced=behaviour == "huge")
        if behaviour == "fail" or (self.fail_after is not None and len(self.requests) > self.fail_after):
            status, body, kind = 500, b'{"detail": "CUDA out of memory"}', "application/json"
        elif behaviour == "html":
            status, body, kind = 200, b"<html><body>502 Bad Gateway</body></html>", "text/html"
        else:
            status, body, kind = self._normal(handler, parsed)
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", kind)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:
            pass  # the client stopped waiting (the slow server)

    def _without_end(self, handler, announced):
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "audio/wav")
            if announced:
                handler.send_header("Content-Length", str(_MOST))
            handler.end_headers()
            while self.sent < _MOST:
                handler.wfile.write(_CHUNK)
                self.sent += len(_CHUNK)
        except OSError:
            pass  # the client hung up: what was sent until then is the measure
        finally:
            self.finished.set()


@pytest.fixture
def speech_server():
    """speech_server("ok"|"fail"|"slow"|"html"|"mp3"|"streamed"|"huge"|"endless", text=…): a started SpeechServer."""
    started = []

    def start(behaviour="ok", **kwargs):
        started.append(SpeechServer(behaviour, **kwargs))
        return started[-1]

    yield start
    for server in started:
        server.stop()


# --- Registry lanes that point at speech servers ---

def remote_lane(lane_id, capability, url, *, priority=1, eur=0, languages=("de", "en"), **params):
    """A registry entry of a speech server: self-hosted and free, or a hosted API paid per use."""
    free = eur == 0
    cost = ({"model": "self-hosted", "unit": "compute", "eur": 0} if free else
            {"model": "per-character", "unit": "1M chars", "eur": eur} if capability == "tts" else
            {"model": "per-minute", "unit": "audio-min", "eur": eur})
    return {
        "id": lane_id, "name": lane_id, "capability": capability, "provider": "Eigener GPU-Server",
        "hosting": "self-hosted" if free else "api", "access": "self-hosted" if free else "api-key",
        "endpoint": url, "health": None, "cost": cost, "status": "live", "priority": priority,
        "quality_tier": "high", "latency_class": "fast",
        "params": {"streaming": False, "languages": list(languages), **params},
        "test": "", "source": "", "notes": "",
    }


def tts_lane(lane_id, url, **kwargs):
    return remote_lane(lane_id, "tts", url, model="kokoro", voices=["de_kerstin", "de_thorsten"], **kwargs)


def stt_lane(lane_id, url, **kwargs):
    return remote_lane(lane_id, "stt", url, model="Systran/faster-whisper-large-v3", **kwargs)


def load(*lanes):
    """The shipped registry (eSpeak NG, Whisper base, …) with `lanes` added."""
    document = copy.deepcopy(SHIPPED)
    document["version"] = "remote-" + "-".join(lane["id"] for lane in lanes)
    document["models"] += list(lanes)
    registry_load(document=document, loaded_by="tests")
