"""The OpenAI audio API as speech servers speak it: the client of remote speech lanes.

Self-hosted speech servers (faster-whisper servers with large models on a GPU, Piper
or Kokoro servers) and hosted APIs answer the same two calls:

- synthesis: `POST …/v1/audio/speech` with JSON `{"model", "input", "voice",
  "response_format": "wav"}` → the audio (`audio/*`);
- recognition: `POST …/v1/audio/transcriptions` as multipart/form-data (`file`,
  `model`, `language`, `prompt`, `response_format=verbose_json`,
  `timestamp_granularities[]=word` and `=segment`) → JSON with `text` and, where the
  server gives them, `segments`, `words` and `language`.

With `Authorization: Bearer <key>` when the lane has a key (model-hub-registry §5).
A lane's endpoint is either the whole URL of the call (its path ends in
`/audio/speech` or `/audio/transcriptions`), or the server's base (`http://gpu:8000`
or `http://gpu:8000/v1`), to which the call's path is added. Every call is one
bounded POST (registry_app.lanes.http: a timeout, no redirects, an answer larger
than its limit refused without being read whole); an answer of the wrong content
type is `bad_response`.
"""
import json
import secrets
from urllib.parse import urlsplit, urlunsplit

from console.parsers import json_text
from registry_app.lanes import http
from registry_app.lanes.failover import LaneFailure

SPEECH_PATH = "audio/speech"
TRANSCRIPTIONS_PATH = "audio/transcriptions"
# One request's audio: a piece of at most 500 characters is well under a minute of
# speech, 2.9 MB as 24 kHz 16-bit WAV; the limit leaves room for slow voices and
# 48 kHz servers.
MAX_SPEECH_BYTES = http.MAX_AUDIO_ANSWER_BYTES
# A transcription's JSON: ten minutes of speech with every word's times is about 200 KB.
MAX_TRANSCRIPTION_BYTES = http.MAX_ANSWER_BYTES


def call_url(endpoint, path):
    """The URL of the call `path` (SPEECH_PATH or TRANSCRIPTIONS_PATH) on a lane's endpoint."""
    parts = urlsplit(endpoint)
    base = parts.path.rstrip("/")
    if base.endswith("/" + path):
        return endpoint
    if base in ("", "/v1"):
        return urlunsplit(parts._replace(path=f"/v1/{path}"))
    return endpoint  # an operator's own path (a proxy): called as it is


def _headers(key, **more):
    headers = dict(more)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def speech(*, endpoint, key, model, text, voice, timeout):
    """(audio bytes, content type) a server made of `text`; LaneFailure otherwise."""
    body = {"model": model, "input": text, "voice": voice, "response_format": "wav"}
    answer = http.post(call_url(endpoint, SPEECH_PATH), body=json.dumps(body).encode(), timeout=timeout,
                       headers=_headers(key, **{"Content-Type": "application/json", "Accept": "audio/wav"}),
                       max_bytes=MAX_SPEECH_BYTES)
    if not answer.content_type.startswith("audio/"):
        raise LaneFailure("bad_response", f"expected audio, got {answer.content_type or 'no content type'}")
    if not answer.body:
        raise LaneFailure("bad_response", "the answer has no audio")
    return answer.body, answer.content_type


def multipart(fields, file_name, file_type, file_bytes):
    """(body, content type) of multipart/form-data: `fields` a list of (name, value)
    (a name may repeat), then the file."""
    boundary = f"stimmwerk-{secrets.token_hex(12)}"
    parts = [(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n').encode()
             for name, value in fields]
    parts.append((f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file_name}"\r\n'
                  f"Content-Type: {file_type}\r\n\r\n").encode() + file_bytes + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def transcription(*, endpoint, key, model, wav, language, prompt, timeout):
    """The JSON object a server answered for the WAV `wav` (`language` None: it
    detects the language); LaneFailure otherwise. `text` is checked to be a string."""
    fields = [("model", model), ("response_format", "verbose_json"),
              ("timestamp_granularities[]", "word"), ("timestamp_granularities[]", "segment")]
    if language:
        fields.append(("language", language))
    if prompt:
        fields.append(("prompt", prompt))
    body, content_type = multipart(fields, "audio.wav", "audio/wav", wav)
    answer = http.post(call_url(endpoint, TRANSCRIPTIONS_PATH), body=body, timeout=timeout,
                       headers=_headers(key, **{"Content-Type": content_type, "Accept": "application/json"}),
                       max_bytes=MAX_TRANSCRIPTION_BYTES)
    if answer.content_type != "application/json":
        raise LaneFailure("bad_response", f"expected JSON, got {answer.content_type or 'no content type'}")
    try:
        data = json_text(answer.body)
    except ValueError:
        raise LaneFailure("bad_response", "not a transcription answer") from None
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise LaneFailure("bad_response", "the transcription has no text")
    return data
