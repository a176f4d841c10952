"""The `api` mode of speech lanes: OpenAI-compatible speech endpoints over HTTP.

Synthesis: `POST <endpoint>` `{"model", "input", "voice", "response_format": "mp3"}`
→ the audio. Transcription: `POST <endpoint>` as multipart/form-data with `file`,
`model`, `language` → `{"text"}`. Both with `Authorization: Bearer <key>` (§5).
"""
import json
import secrets

from registry_app.lanes import http
from registry_app.lanes.failover import LaneFailure


def synthesize(*, endpoint, key, model, text, voice, timeout):
    """The MP3 bytes a hosted speech API made of `text`."""
    body = {"model": model, "input": text, "voice": voice, "response_format": "mp3"}
    answer = http.post(endpoint, body=json.dumps(body).encode(), timeout=timeout,
                       headers={"Content-Type": "application/json", "Accept": "audio/mpeg",
                                "Authorization": f"Bearer {key}"}, max_bytes=http.MAX_AUDIO_ANSWER_BYTES)
    if not answer.content_type.startswith("audio/") or not answer.body:
        raise LaneFailure("bad_response", f"expected audio, got {answer.content_type or 'no content type'}")
    return answer.body


def _multipart(fields, file_bytes):
    boundary = f"stimmwerk-{secrets.token_hex(12)}"
    parts = [(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n').encode()
             for name, value in fields.items()]
    parts.append((f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="audio"\r\n'
                  "Content-Type: application/octet-stream\r\n\r\n").encode() + file_bytes + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def transcribe(*, endpoint, key, model, audio, language, timeout):
    """The text a hosted speech API heard in `audio`."""
    body, content_type = _multipart({"model": model, "language": language, "response_format": "json"}, audio)
    answer = http.post(endpoint, body=body, timeout=timeout,
                       headers={"Content-Type": content_type, "Accept": "application/json",
                                "Authorization": f"Bearer {key}"})
    try:
        text = json.loads(answer.body)["text"]
    except (ValueError, KeyError, TypeError):
        raise LaneFailure("bad_response", "not a transcription answer") from None
    if not isinstance(text, str):
        raise LaneFailure("bad_response", "the transcription has no text")
    return text.strip()
