"""A fake Azure Speech text-to-speech REST endpoint on loopback: `POST
/cognitiveservices/v1` as Azure documents it. It checks the request field by field —
`Ocp-Apim-Subscription-Key`, `Content-Type: application/ssml+xml`, an
`X-Microsoft-OutputFormat` Azure knows, SSML with `<speak version="1.0"
xml:lang="…">` and one `<voice name="…">` it knows — and answers 401 (a wrong key)
or 400 (anything else wrong) as Azure does. A good request is answered with
`Transfer-Encoding: chunked` audio in the asked format: `chunks` pieces of
`chunk_bytes` bytes each; `hold` (an Event) keeps all but the first piece back until
set, so a test sees the first audio before the rest is made. `fail_from` (a request's
index, settable while it runs) makes that request and every later one fail after its
first piece: `failure="kill"` drops the connection mid-answer (a server that died),
`"stall"` sends nothing more (a server that hangs). `first_byte_delay` (seconds) is
Azure's own time before its answer starts (the benchmark's vendor delay). The pieces are
the format's silence, or with `audible` a 440 Hz tone in it (`tone_of`: a phone whose
test must hear the agent, and can compare what it heard). It records every request
(headers, SSML, text, voice, format) and whether the client hung up mid-answer.
"""
import socket
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy

from agent_app.audio import alaw_encode, mulaw_encode

SSML = "{http://www.w3.org/2001/10/synthesis}"
FORMATS = {"raw-8khz-8bit-mono-alaw": b"\xd5", "raw-8khz-8bit-mono-mulaw": b"\xff",
           "raw-16khz-16bit-mono-pcm": b"\x01\x00", "raw-8khz-16bit-mono-pcm": b"\x01\x00",
           "raw-24khz-16bit-mono-pcm": b"\x01\x00"}

TONE_HZ = 440


def tone_of(output_format: str, size: int) -> bytes:
    """`size` bytes of a 440 Hz tone in `output_format`; a piece of 100 ms (or any multiple
    of 25 ms) ends where the next begins, so the pieces play as one tone."""
    rate = int(output_format.split("-")[1].removesuffix("khz")) * 1000
    eight_bit = "8bit" in output_format
    count = size if eight_bit else size // 2
    samples = (numpy.sin(2 * numpy.pi * TONE_HZ * numpy.arange(count) / rate) * 8000).astype(numpy.int16)
    if not eight_bit:
        return samples.astype("<i2").tobytes()
    return alaw_encode(samples) if output_format.endswith("alaw") else mulaw_encode(samples)


@dataclass
class AzureRequest:
    headers: dict[str, str]
    ssml: str
    language: str = ""
    voice: str = ""
    text: str = ""
    output_format: str = ""
    hung_up: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


class FakeAzureTts:
    def __init__(self, *, key: str = "az-test-key", voices: tuple[str, ...] = ("de-DE-KatjaNeural",),
                 chunks: int = 4, chunk_bytes: int = 1600, hold: threading.Event | None = None,
                 status: int | None = None, fail_from: int | None = None, failure: str = "kill",
                 first_byte_delay: float = 0.0, audible: bool = False) -> None:
        self.key, self.voices, self.chunks, self.chunk_bytes = key, voices, chunks, chunk_bytes
        self.audible = audible
        self.hold, self.status = hold, status
        self.fail_from, self.failure, self.first_byte_delay = fail_from, failure, first_byte_delay
        self._stopping = threading.Event()
        self.requests: list[AzureRequest] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                fake.answer(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True

    def __enter__(self) -> "FakeAzureTts":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        if self.hold is not None:
            self.hold.set()
        self._server.shutdown()
        self._server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _refuse(self, handler: BaseHTTPRequestHandler, status: int, why: str) -> None:
        body = why.encode()
        handler.send_response(status)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0)).decode()
        request = AzureRequest(headers={k.lower(): v for k, v in handler.headers.items()}, ssml=body)
        self.requests.append(request)
        failing = self.fail_from is not None and len(self.requests) > self.fail_from
        try:
            if self.status is not None:
                return self._refuse(handler, self.status, "refused")
            if handler.path != "/cognitiveservices/v1":
                return self._refuse(handler, 404, "not found")
            if request.headers.get("ocp-apim-subscription-key") != self.key:
                return self._refuse(handler, 401, "Access denied due to invalid subscription key")
            if request.headers.get("content-type") != "application/ssml+xml":
                return self._refuse(handler, 400, "Content-Type must be application/ssml+xml")
            request.output_format = request.headers.get("x-microsoft-outputformat", "")
            if request.output_format not in FORMATS:
                return self._refuse(handler, 400, "unknown X-Microsoft-OutputFormat")
            try:
                speak = ET.fromstring(body)
            except ET.ParseError:
                return self._refuse(handler, 400, "SSML is not well-formed")
            voices = speak.findall(f"{SSML}voice")
            if speak.tag != f"{SSML}speak" or speak.get("version") != "1.0" or len(voices) != 1:
                return self._refuse(handler, 400, "SSML needs <speak version=\"1.0\"> with one <voice>")
            request.language = speak.get("{http://www.w3.org/XML/1998/namespace}lang", "")
            request.voice, request.text = voices[0].get("name", ""), "".join(voices[0].itertext())
            if not request.language or request.voice not in self.voices or not request.text.strip():
                return self._refuse(handler, 400, "unknown voice, missing xml:lang or no text")
            if self.first_byte_delay:
                self._stopping.wait(self.first_byte_delay)  # the vendor's synthesis before its first byte
            handler.send_response(200)
            handler.send_header("Content-Type", "audio/basic" if "8bit" in request.output_format else "audio/x-wav")
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            unit = FORMATS[request.output_format]
            piece = (tone_of(request.output_format, self.chunk_bytes) if self.audible
                     else unit * (self.chunk_bytes // len(unit)))
            try:
                for n in range(self.chunks):
                    if n == 1 and failing and self.failure == "kill":
                        handler.connection.shutdown(socket.SHUT_RDWR)  # no last chunk: the server is gone
                        return
                    if n == 1 and failing:
                        self._stopping.wait(30)  # hangs until the client gives up (or the fake ends)
                        return
                    if n == 1 and self.hold is not None:
                        self.hold.wait(10)
                    handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    handler.wfile.flush()
                handler.wfile.write(b"0\r\n\r\n")
                handler.wfile.flush()
            except OSError:
                request.hung_up.set()
        finally:
            request.done.set()
