"""A fake Deepgram live server (WebSocket `/v1/listen`) on loopback, speaking Deepgram's
wire format: `Results` (channel.alternatives[0].transcript and words, is_final,
speech_final, from_finalize), `UtteranceEnd` (last_word_end), `Metadata` after
CloseStream; it answers KeepAlive, Finalize and CloseStream as Deepgram documents.

It "hears" a script: `utterances` are said one after the other, one word per
`seconds_per_word` of the audio it receives, `pause_seconds` between utterances (counted in the connection's `encoding`
and `sample_rate`), an interim result after each word, a final `speech_final` result
once `endpointing` ms of audio passed after the last word, then `UtteranceEnd` after
`utterance_end_ms`. It records every connection (path, query, headers, the bytes of
audio and the control messages), so a test sees the encoding it received. `status`
refuses the handshake with that HTTP status; `stall` answers nothing; `kill_after`
(seconds of audio) drops the connection without a word once that much arrived, as a
server that died mid-turn.

With `by_energy` it hears the caller's actual speech instead of a script's timing (the
benchmark's turns follow the agent's replies): audio louder than a quiet line is speech,
an interim result comes every half second of it, and `final_delay` seconds of audio after
the speech ends the final result (`speech_final`) with the next of `utterances`, cycled —
the vendor's delay after the end of speech; in silence an empty result about once a
second, as Deepgram sends them. Its `kill_after` counts seconds of speech.
"""
import json
import socket as socket_module
import threading
import uuid
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from websockets.http11 import Response
from websockets.sync.server import Server, ServerConnection, serve

BYTES_PER_SAMPLE = {"linear16": 2, "mulaw": 1, "alaw": 1}


@dataclass
class Connection:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    audio: bytearray = field(default_factory=bytearray)
    controls: list[str] = field(default_factory=list)  # the `type` of every text message
    closed: threading.Event = field(default_factory=threading.Event)

    def param(self, name: str) -> str:
        return self.query.get(name, [""])[0]


class FakeDeepgram:
    def __init__(self, *, utterances: list[str] | None = None, seconds_per_word: float = 0.3,
                 pause_seconds: float = 1.5, key: str = "dg-test-key", status: int | None = None, stall: bool = False,
                 kill_after: float | None = None, by_energy: bool = False, final_delay: float = 0.15) -> None:
        self.utterances, self.seconds_per_word = list(utterances or []), seconds_per_word
        self.pause_seconds, self.kill_after = pause_seconds, kill_after
        self.killed = threading.Event()
        self.by_energy, self.final_delay = by_energy, final_delay
        self.key, self.status, self.stall = key, status, stall
        self.connections: list[Connection] = []
        self._server: Server | None = None

    def __enter__(self) -> "FakeDeepgram":
        self._server = serve(self._handle, "127.0.0.1", 0, process_request=self._check)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"ws://127.0.0.1:{self._server.socket.getsockname()[1]}"

    def _check(self, connection: ServerConnection, request) -> Response | None:
        if self.status is not None:
            return connection.respond(self.status, "refused\n")
        if request.headers.get("Authorization") != f"Token {self.key}":
            return connection.respond(401, "Invalid credentials\n")
        if urlsplit(request.path).path != "/v1/listen":
            return connection.respond(404, "Not found\n")
        return None

    def _handle(self, socket: ServerConnection) -> None:
        request = socket.request
        assert request is not None
        parts = urlsplit(request.path)
        record = Connection(path=parts.path, query=parse_qs(parts.query), headers={name.lower(): value for name, value in request.headers.raw_items()})
        self.connections.append(record)
        encoding, rate = record.param("encoding") or "linear16", int(record.param("sample_rate") or 16000)
        per_second = rate * BYTES_PER_SAMPLE[encoding]
        endpointing = int(record.param("endpointing") or 10) / 1000
        utterance_end = int(record.param("utterance_end_ms") or 0) / 1000
        pending = [text.split() for text in self.utterances]
        said: list[dict] = []  # words of the current utterance so far
        state = {"heard": 0.0, "last_end": 0.0, "cursor": 0.0, "ended": True}
        request_id = str(uuid.uuid4())

        def results(words: list[dict], *, is_final: bool, speech_final: bool, from_finalize: bool = False) -> None:
            start = words[0]["start"] if words else state["heard"]
            socket.send(json.dumps({
                "type": "Results", "channel_index": [0, 1], "duration": round(state["heard"] - start, 3),
                "start": round(start, 3), "is_final": is_final, "speech_final": speech_final,
                "from_finalize": from_finalize,
                "channel": {"alternatives": [{"transcript": " ".join(w["punctuated_word"] for w in words),
                                              "confidence": 0.98, "words": words}]},
                "metadata": {"request_id": request_id, "model_uuid": str(uuid.uuid4()),
                             "model_info": {"name": "2-general-nova", "version": "2025-01-01", "arch": "nova-3"}},
            }))

        def advance(seconds: float) -> None:
            state["heard"] += seconds
            while pending and len(said) < len(pending[0]) and state["heard"] >= state["cursor"] + self.seconds_per_word:
                start = state["cursor"]
                word = pending[0][len(said)]
                said.append({"word": word.lower().strip(".,?!"), "start": round(start, 3),
                             "end": round(start + self.seconds_per_word, 3), "confidence": 0.97,
                             "punctuated_word": word})
                state["cursor"] = state["last_end"] = start + self.seconds_per_word
                state["ended"] = False
                results(said, is_final=False, speech_final=False)
            if said and len(said) == len(pending[0]) and state["heard"] >= state["last_end"] + endpointing:
                results(said, is_final=True, speech_final=True)
                pending.pop(0)
                said.clear()
                state["cursor"] = state["heard"] + self.pause_seconds
            if (not state["ended"] and not said and utterance_end
                    and state["heard"] >= state["last_end"] + utterance_end):
                socket.send(json.dumps({"type": "UtteranceEnd", "channel": [0, 1],
                                        "last_word_end": round(state["last_end"], 3)}))
                state["ended"] = True

        if self.by_energy:
            return self._hear_by_energy(socket, record, encoding, per_second, results)
        try:
            for message in socket:
                if isinstance(message, bytes):
                    record.audio += message
                    if self.kill_after is not None and len(record.audio) >= self.kill_after * per_second:
                        self.killed.set()
                        socket.socket.shutdown(socket_module.SHUT_RDWR)  # no close frame: the server is gone
                        break
                    if not self.stall:
                        advance(len(message) / per_second)
                    continue
                kind = json.loads(message).get("type", "")
                record.controls.append(kind)
                if kind == "Finalize" and said:
                    results(said, is_final=True, speech_final=False, from_finalize=True)
                    pending[0] = pending[0][len(said):]
                    if not pending[0]:
                        pending.pop(0)
                    said.clear()
                elif kind == "CloseStream":
                    socket.send(json.dumps({
                        "type": "Metadata", "transaction_key": "deprecated", "request_id": request_id,
                        "sha256": "0" * 64, "created": "2026-11-27T23:00:00.000Z",
                        "duration": round(state["heard"], 3), "channels": 1, "models": [str(uuid.uuid4())],
                        "model_info": {},
                    }))
                    break
        finally:
            record.closed.set()

    def _hear_by_energy(self, socket: ServerConnection, record: Connection, encoding: str, per_second: int,
                        results) -> None:
        """The `by_energy` server: results follow the loudness of the audio it receives."""
        import audioop  # deprecated (the benchmark's fake only): imported where it is used

        state = {"speech": 0.0, "quiet": 0.0, "heard": 0.0, "interim_at": 0.0, "said": 0}
        try:
            for message in socket:
                text = self.utterances[int(state["said"]) % len(self.utterances)].split() if self.utterances else []
                if not isinstance(message, bytes):
                    kind = json.loads(message).get("type", "")
                    record.controls.append(kind)
                    if kind == "CloseStream":
                        break
                    if kind == "Finalize" and state["speech"]:  # what it holds, at once, as Deepgram does
                        results(_words(text, state["heard"]), is_final=True, speech_final=False, from_finalize=True)
                        state.update(speech=0.0, quiet=0.0, interim_at=0.0, said=state["said"] + 1)
                    continue
                record.audio += message
                seconds = len(message) / per_second
                pcm = message if encoding == "linear16" else (
                    audioop.ulaw2lin(message, 2) if encoding == "mulaw" else audioop.alaw2lin(message, 2))
                state["heard"] += seconds
                if audioop.rms(pcm, 2) > LOUD_RMS:
                    state["speech"] += seconds
                    state["quiet"] = 0.0
                    if self.kill_after is not None and state["speech"] >= self.kill_after:
                        self.killed.set()
                        socket.socket.shutdown(socket_module.SHUT_RDWR)
                        break
                    if state["speech"] - state["interim_at"] >= 0.5:
                        state["interim_at"] = state["speech"]
                        words = text[:max(1, int(state["speech"] / self.seconds_per_word))]
                        results(_words(words, state["heard"]), is_final=False, speech_final=False)
                elif state["speech"]:
                    state["quiet"] += seconds
                    if state["quiet"] >= self.final_delay:
                        results(_words(text, state["heard"]), is_final=True, speech_final=True)
                        state.update(speech=0.0, quiet=0.0, interim_at=0.0, said=state["said"] + 1)
                else:  # silence: Deepgram still answers, with empty results, about once a second
                    state["quiet"] += seconds
                    if state["quiet"] >= 1.0:
                        results([], is_final=True, speech_final=False)
                        state["quiet"] = 0.0
        finally:
            record.closed.set()


# Louder than this (RMS of 16-bit samples) is speech; a phone line's silence is far below.
LOUD_RMS = 300


def _words(words: list[str], end: float) -> list[dict]:
    step = 0.3
    start = max(0.0, end - step * len(words))
    return [{"word": word.lower().strip(".,?!"), "start": round(start + n * step, 3),
             "end": round(start + (n + 1) * step, 3), "confidence": 0.97, "punctuated_word": word}
            for n, word in enumerate(words)]
