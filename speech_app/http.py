"""HTTP plumbing of the speech views: bounded request bodies and audio responses.

Audio uploads are larger than Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB, which
applies to `request.body`) allows, and raising that limit globally would loosen it
for every endpoint. The speech views read their bodies themselves instead, refusing
an oversized body from its Content-Length before reading it and never reading more
than the limit plus one byte.
"""
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation

from console.parsers import BoundedMultipartParser, JSONParser, content_length, read_bounded
from speech_app.decode import MAX_AUDIO_BYTES
from speech_app.errors import AudioTooLarge
from speech_app.services import MAX_AUDIO_BASE64_CHARS

# The JSON around the base64 audio (filename, language, phrases) gets some room.
MAX_TRANSCRIBE_JSON_BYTES = MAX_AUDIO_BASE64_CHARS + 256 * 1024


def audio_too_large(limit, declared):
    if declared is not None:
        return AudioTooLarge(f"The request body has {declared} bytes; at most {limit} are accepted.",
                             details={"bytes": declared, "maxBytes": limit})
    return AudioTooLarge(f"The request body is larger than {limit} bytes.", details={"maxBytes": limit})


class BoundedJSONParser(JSONParser):
    """The project's JSON parser with the audio upload's size limit (413
    `audio_too_large`). The stream is read directly, never `request.body`, where
    Django's 2.5 MB limit would refuse larger uploads before this limit applies."""

    limit = MAX_TRANSCRIBE_JSON_BYTES
    too_large = staticmethod(audio_too_large)


# The form's boundaries, headers and fields beside an uploaded audio file.
MULTIPART_OVERHEAD = 64 * 1024


class AudioMultipartParser(BoundedMultipartParser):
    """A multipart upload of one audio file (a Whisper-style client's): at most the
    audio limit and the form around it, refused from its Content-Length before a byte
    is read (413 `audio_too_large`)."""

    limit = MAX_AUDIO_BYTES + MULTIPART_OVERHEAD
    too_large = staticmethod(audio_too_large)


def uploaded_audio(upload: UploadedFile) -> bytes:
    """The bytes of an uploaded file, at most the audio limit."""
    if (upload.size or 0) > MAX_AUDIO_BYTES:
        raise audio_too_large(MAX_AUDIO_BYTES, upload.size)
    return upload.read()


def raw_audio_body(request):
    """The raw body of an upload (any Content-Type), bounded by the audio size limit."""
    return read_bounded(request.stream, content_length(request.META), MAX_AUDIO_BYTES, audio_too_large)


class AnyAcceptNegotiation(DefaultContentNegotiation):
    """Audio endpoints answer MP3 whatever `Accept` says (CONTRACT §4).

    DRF would refuse an `Accept` that none of the view's renderers offers with 406
    before the view runs; here the first renderer (JSON, used for errors) is chosen
    instead, and the view returns the audio as a plain HttpResponse.
    """

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type


# The 200 of every MP3 endpoint, as extend_schema(responses=MP3_RESPONSE): the media type is audio/mpeg.
MP3_RESPONSE = {(200, "audio/mpeg"): OpenApiResponse(OpenApiTypes.BINARY,
                                                    description="An MP3; headers X-Duration-Sec and ETag.")}


def mp3_response(rendered):
    response = HttpResponse(rendered.mp3, content_type="audio/mpeg")
    response["X-Duration-Sec"] = f"{rendered.duration_sec:.2f}"
    response["ETag"] = f'"{rendered.key}"'
    response["Content-Length"] = str(len(rendered.mp3))
    response["Cache-Control"] = "private, max-age=0"
    return response
