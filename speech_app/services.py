"""Speaking texts as MP3 and transcribing audio: the services other apps call."""
import base64
import binascii
import hashlib
import json

from console.engines import local_engine_id
from registry_app.routing import route
from speech_app.cache import RenderedAudio, render_cache
from speech_app.decode import MAX_AUDIO_BYTES, decode_to_pcm
from speech_app.encode import ENCODER_VERSION, mp3_from_pcm
from speech_app.errors import AudioTooLarge, EmptyAudio, InvalidBase64, TextTooLong
from speech_app.piper import piper_voices
from speech_app.recognition import Recognizer, Transcript
from speech_app.stt import AUTO_LANGUAGE, DEFAULT_LANGUAGE, RECOGNIZERS, Deadline, checked_language, recognizer
from speech_app.tts import DEFAULT_SYNTHESIZER, SYNTHESIZERS, Synthesizer, default_voice, synthesizer

PIPER_SYNTHESIZER = "piper"

# The longest effective text rendered in one request: a full script (5,000
# characters), the disclosure and variable values; about eight minutes of speech.
MAX_RENDER_CHARS = 6000
# Base64 of the largest accepted audio, for refusing oversized bodies unread.
MAX_AUDIO_BASE64_CHARS = 4 * -(-MAX_AUDIO_BYTES // 3)


def render_key(text: str, voice: str, engine_version: str) -> str:
    """The cache key and ETag: a hash of the effective text, the voice and the engine."""
    material = json.dumps([text, voice, engine_version], ensure_ascii=False).encode()
    return hashlib.sha256(material).hexdigest()


def synthesizer_for(language: str, voice: str | None = None) -> Synthesizer:
    """The synthesis engine for `voice` in `language`: an operator's Piper voice of that
    name (PIPER_VOICES), or without a voice the Piper voice named after the language
    (`de=…onnx` makes it German's voice); else the first lane of the registry's tts
    route (CONTRACT §7 order) that an engine of this process serves; without a
    registry, or when no routed lane is served here, the default engine — the engines
    of this process serve whether or not a registry is loaded (CONTRACT §4)."""
    if (voice or language) in piper_voices():
        return synthesizer(PIPER_SYNTHESIZER)
    for candidate in route("tts", language=language).candidates:
        engine_id = local_engine_id(candidate.lane, SYNTHESIZERS)
        # A routed engine that has no voice for it here (Piper without a voice file for
        # the language) is skipped like a lane no engine here serves.
        if engine_id is not None and synthesizer(engine_id).serves(voice or language):
            return synthesizer(engine_id)
    return synthesizer(DEFAULT_SYNTHESIZER)


def speech_render(*, text: str, voice: str | None = None) -> tuple[RenderedAudio, bool]:
    """`text` spoken as MP3 (a RenderedAudio), from the cache when it was rendered before.

    Returns (rendered, from_cache)."""
    if len(text) > MAX_RENDER_CHARS:
        raise TextTooLong(f"The text to speak has {len(text)} characters; at most {MAX_RENDER_CHARS} can be "
                          "rendered in one request.", details={"length": len(text), "maxLength": MAX_RENDER_CHARS})
    voice = voice or default_voice()
    # A Piper voice by its name; else the voice's language ("de" of "de+f3") routes.
    engine = synthesizer_for(voice.partition("+")[0], voice=voice)
    engine.check_voice(voice)
    key = render_key(text, voice, f"{engine.version}/{ENCODER_VERSION}")

    def render() -> RenderedAudio:
        speech = engine.synthesize(text, voice=voice)
        return RenderedAudio(key=key, mp3=mp3_from_pcm(speech.pcm, speech.sample_rate),
                             duration_sec=round(speech.duration_sec, 2))

    return render_cache().get_or_render(key, render)


def audio_from_base64(value: str) -> bytes:
    """The bytes of a base64 upload (a `data:` URL prefix and line breaks are allowed)."""
    if value.startswith("data:") and "," in value:
        value = value.partition(",")[2]
    value = "".join(value.split())
    if not value:
        raise EmptyAudio()
    if len(value) > MAX_AUDIO_BASE64_CHARS:
        raise AudioTooLarge(details={"maxBytes": MAX_AUDIO_BYTES})
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidBase64() from None


def recognizer_for(language: str) -> Recognizer:
    """The recognition engine for `language` (or "auto"), chosen like synthesis: the
    first lane of the registry's stt route whose engine runs in this process and
    serves that language here. Without a registry, or when no routed lane is served
    here: Vosk for the languages an operator configured in VOSK_MODELS, Whisper for
    every other language."""
    for candidate in route("stt", language=None if language == AUTO_LANGUAGE else language).candidates:
        engine_id = local_engine_id(candidate.lane, RECOGNIZERS)
        if engine_id is not None and recognizer(engine_id).serves(language):
            return recognizer(engine_id)
    vosk = recognizer("vosk")
    return vosk if vosk.serves(language) else recognizer()


def audio_transcribe(*, audio: bytes, language: str | None = None, default_language: str = DEFAULT_LANGUAGE,
                     phrases: list[str] | None = None) -> Transcript:
    """A Transcript of `audio` (bytes of any accepted format) in `language`
    (`default_language` when None; "auto" lets Whisper detect it).

    Client mistakes are reported before the server's state: a malformed language,
    empty, oversized or undecodable audio answer the same with or without a model;
    a missing model (503) only for audio that could be recognised. Recognition runs
    against a deadline derived from the audio's length (503 `stt_busy` past it)."""
    language = checked_language(language, default=default_language)
    if not audio:
        raise EmptyAudio()
    decoded = decode_to_pcm(audio)
    engine = recognizer_for(language)
    return engine.transcribe(decoded.pcm, language=language, phrases=phrases or None,
                             deadline=Deadline.for_audio(decoded.duration_sec))
