"""Azure Speech text-to-speech over REST (protocol `azure-tts`): `POST
<base>/cognitiveservices/v1` with `Ocp-Apim-Subscription-Key: <key>`,
`Content-Type: application/ssml+xml` and `X-Microsoft-OutputFormat` in the call's
encoding — `raw-8khz-8bit-mono-alaw` / `raw-8khz-8bit-mono-mulaw` for phone calls (no
transcoding on our side), `raw-16khz-16bit-mono-pcm` for the browser and renders.

The body is SSML: `<speak version="1.0" xml:lang="de-DE">` (the voice's locale) with one
`<voice name="…">` holding the text, escaped. Azure answers the audio with chunked
transfer encoding as it is made; the stream hands each chunk over as it arrives, so the
first audio plays while the rest is still coming. The REST API has no cancel message:
`cancel` (barge-in) shuts the connection down, which is how Azure stops synthesising.

The base URL is the resource's region endpoint, e.g.
`https://westeurope.tts.speech.microsoft.com` (GATEWAY_ENDPOINT_<LANE>; the default is
West Europe).
"""
import time
from collections.abc import Iterator
from xml.sax.saxutils import escape, quoteattr

from django.conf import settings

from registry_app.lanes.failover import LaneFailure
from registry_app.lanes.http import MAX_AUDIO_ANSWER_BYTES, Cancel, StreamingAnswer, post_stream
from speech_app.streaming import (
    SYNTHESIS_STALL_SECONDS,
    CallAudio,
    LaneSynthesizer,
    ProtocolModule,
    SynthesisStream,
    declare,
)

PROTOCOL = "azure-tts"
PATH = "/cognitiveservices/v1"
# Azure's raw output formats by the call's encoding and rate.
OUTPUT_FORMATS = {
    ("alaw", 8000): "raw-8khz-8bit-mono-alaw",
    ("mulaw", 8000): "raw-8khz-8bit-mono-mulaw",
    ("linear16", 8000): "raw-8khz-16bit-mono-pcm",
    ("linear16", 16000): "raw-16khz-16bit-mono-pcm",
    ("linear16", 24000): "raw-24khz-16bit-mono-pcm",
}


def output_format(audio: CallAudio) -> str:
    found = OUTPUT_FORMATS.get((audio.encoding, audio.sample_rate))
    if found is None:
        raise LaneFailure("unavailable", f"Azure has no raw format for {audio.encoding} at {audio.sample_rate} Hz")
    return found


def voice_locale(voice: str, language: str) -> str:
    """The SSML language of a voice: its locale (`de-DE-KatjaNeural` → `de-DE`), else the language's."""
    parts = voice.split("-")
    if len(parts) >= 3 and len(parts[0]) == 2 and len(parts[1]) == 2:
        return f"{parts[0]}-{parts[1]}"
    return "de-DE" if language == "de" else language


def ssml(text: str, *, voice: str, language: str) -> bytes:
    return (f'<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis" '
            f'xml:lang={quoteattr(voice_locale(voice, language))}>'
            f'<voice name={quoteattr(voice)}>{escape(text)}</voice></speak>').encode()


class AzureStream(SynthesisStream):
    def __init__(self, answer: StreamingAnswer, cancel: Cancel) -> None:
        self._answer, self._cancel = answer, cancel

    def chunks(self) -> Iterator[bytes]:
        try:
            for chunk in self._answer.chunks():
                self._answer.progress()
                yield chunk
        except LaneFailure:
            if self._cancel.cancelled:
                return  # the socket was shut down on purpose
            raise
        finally:
            self._answer.close()

    def cancel(self) -> None:
        self._cancel.cancel()


class AzureSynthesizer(LaneSynthesizer):
    """The StreamingSynthesizer of an `azure-tts` lane."""

    protocol = PROTOCOL

    def speak(self, text: str, *, audio: CallAudio, language: str) -> AzureStream:
        text = self.checked(text)
        now, cancel = time.monotonic(), Cancel()
        answer = post_stream(
            self.endpoint if self.endpoint.endswith(PATH) else f"{self.endpoint}{PATH}", body=ssml(text, voice=self.voice, language=language),
            headers={"Ocp-Apim-Subscription-Key": self._key, "Content-Type": "application/ssml+xml",
                     "X-Microsoft-OutputFormat": output_format(audio)},
            connect_timeout=SYNTHESIS_STALL_SECONDS, first_by=now + SYNTHESIS_STALL_SECONDS,
            ends_by=now + settings.GATEWAY_DEADLINE_SEC, idle_sec=SYNTHESIS_STALL_SECONDS, cancel=cancel,
            max_bytes=MAX_AUDIO_ANSWER_BYTES)
        return AzureStream(answer, cancel)


declare(ProtocolModule(
    protocol=PROTOCOL, capability="tts", default_endpoint="https://westeurope.tts.speech.microsoft.com",
    schemes=("https", "http"),
    make=lambda lane, endpoint, key, voice: AzureSynthesizer(lane, endpoint=endpoint, key=key, voice=voice),
))
