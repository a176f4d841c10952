"""Speaking texts as MP3 and transcribing audio: the services other apps call.

Both go through the registry's lanes (speech_app.lanes): the engines of this process,
and remote speech servers in `api` mode that speak the OpenAI audio API, in the cost
policy's order, with failover, cooldowns and the local engines as the fallback.
Without a remote lane to call they are the local engines, exactly as before.
"""
import base64
import binascii
import hashlib
import json
import time
from collections.abc import Callable
from typing import cast

from django.conf import settings

from console.engines import SPEECH_MODULE_ENDPOINTS, local_engine_id
from registry_app import snapshot as registry_snapshot
from registry_app.lanes.cost import Measures, lane_cost
from registry_app.lanes.failover import LaneFailure, Step
from registry_app.lanes.outcomes import record_failure, record_success
from registry_app.models import LaneCooldown
from registry_app.routing import UNREAD, USABLE_STATUSES, Route, active_cooldowns, route
from registry_app.snapshot import Snapshot, SnapshotLane
from speech_app.cache import RenderedAudio, render_cache
from speech_app.decode import MAX_AUDIO_BYTES, decode_to_pcm
from speech_app.encode import ENCODER_VERSION, mp3_from_pcm
from speech_app.errors import AudioTooLarge, EmptyAudio, InvalidBase64, TextTooLong
from speech_app.lanes import (
    LaneRecognizer,
    LaneSynthesizer,
    SpeechPlan,
    answered,
    plan_steps,
    speech_answer,
    stt_plan,
    tts_plan,
)
from speech_app.piper import piper_voices
from speech_app.recognition import Recognizer, Transcript
from speech_app.remote import RemoteSynthesizer
from speech_app.streaming import StreamingRecognizer, StreamingSynthesizer, protocol_module, streaming_engine
from speech_app.stt import AUTO_LANGUAGE, DEFAULT_LANGUAGE, RECOGNIZERS, Deadline, checked_language, recognizer
from speech_app.tts import DEFAULT_SYNTHESIZER, SYNTHESIZERS, Synthesizer, default_voice, synthesizer
from speech_app.voice_agent import VoiceAgent

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


def local_synthesizer(language: str, voice: str | None = None, routed: Route | None = None) -> Synthesizer:
    """This process's synthesis engine for `voice` in `language`: an operator's Piper
    voice of that name (PIPER_VOICES), or without a voice the Piper voice named after
    the language (`de=…onnx` makes it German's voice); else the first lane of the
    registry's tts route (`routed`, CONTRACT §7 order) whose engine here speaks the
    voice (a Piper lane without such a voice is passed over); without a registry, or
    when no routed lane is served here, the default engine — the engines of this
    process serve whether or not a registry is loaded (CONTRACT §4)."""
    if (voice or language) in piper_voices():
        return synthesizer(PIPER_SYNTHESIZER)
    for candidate in (routed or route("tts", language=language)).candidates:
        engine_id = local_engine_id(candidate.lane, SYNTHESIZERS)
        # A routed engine that has no voice for it here (Piper without a voice file for
        # the language) is skipped like a lane no engine here serves.
        if engine_id is not None and synthesizer(engine_id).serves(voice or language):
            return synthesizer(engine_id)
    return synthesizer(DEFAULT_SYNTHESIZER)


def voice_language(voice: str, current: object = UNREAD) -> tuple[str | None, str]:
    """(the language a voice speaks, the voice this process's engines speak for it).

    An operator's Piper voice speaks its file's language; a voice of a remote tts lane
    (`params.voices` of a usable lane that is not this service's speech module: a
    speech server's voice) speaks that lane's first language, which this process's
    engines speak with their own voice for it when they stand in; any other voice is
    eSpeak NG's, named by its language (`de`, `de+f3`, `en-us`). `current`: the
    registry snapshot, when read already."""
    spec = piper_voices().get(voice)
    if spec is not None:
        return spec.language or voice, voice
    snapshot = registry_snapshot.current() if current is UNREAD else cast(Snapshot | None, current)
    for lane in snapshot.by_capability.get("tts", ()) if snapshot is not None else ():
        params = lane.entry.get("params") or {}
        if (lane.status in USABLE_STATUSES and lane.entry.get("endpoint") != SPEECH_MODULE_ENDPOINTS["tts"]
                and voice in (params.get("voices") or ())):
            languages = params.get("languages") or []
            return (languages[0], languages[0]) if languages else (None, default_voice())
    return voice.partition("+")[0], voice


def synthesizer_for(language: str, voice: str | None = None) -> Synthesizer:
    """The synthesis engine for `voice` (None: the language's) in `language`, the one
    choice of render, the agent and the voice gateway:

    - when no remote tts lane can be called, this process's engine
      (local_synthesizer): an operator's Piper voice (PIPER_VOICES) by its name or its
      language, else the first routed lane whose engine here speaks the voice, else
      eSpeak NG;
    - else a LaneSynthesizer that tries the registry's tts lanes in order, remote
      speech servers among them (they get the German normaliser's spoken text as
      every engine does), with that same local engine as the fallback."""
    current = registry_snapshot.current()
    local_voice = voice_language(voice, current)[1] if voice else language
    plan = tts_plan(language, voice, current=current)
    if not plan.calls_remote(settings.GATEWAY_MAX_EUR) and local_voice == (voice or language):
        return local_synthesizer(language, voice, plan.route)
    return LaneSynthesizer(plan, local=lambda: local_synthesizer(language, local_voice, plan.route),
                           local_voice=local_voice)


def render_with(engine: Synthesizer, text: str, voice: str) -> tuple[RenderedAudio, bool]:
    """`text` spoken by `engine` as MP3, from the cache when it was rendered before:
    (rendered, from_cache). The key names the engine and its voice, so a remote lane's
    audio and a local engine's never stand in for each other."""
    engine.check_voice(voice)
    key = render_key(text, voice, f"{engine.version}/{ENCODER_VERSION}")

    def render() -> RenderedAudio:
        speech = engine.synthesize(text, voice=voice)
        return RenderedAudio(key=key, mp3=mp3_from_pcm(speech.pcm, speech.sample_rate),
                             duration_sec=round(speech.duration_sec, 2))

    return render_cache().get_or_render(key, render)


def render_steps(plan: SpeechPlan, *, text: str, language: str | None, local_voice: str, max_eur: float,
                 ends_by: float) -> list[Step]:
    """The Steps of rendering `text` through `plan`, each answering (rendered,
    from_cache): a remote lane with its voice, each of its requests within the
    step's time and all of them by `ends_by`; this process's engines with `local_voice`."""
    def remote(engine: RemoteSynthesizer, timeout: float) -> tuple[RenderedAudio, bool]:
        return render_with(engine.within(timeout, ends_by), text, engine.voice)

    def local(timeout: float) -> tuple[RenderedAudio, bool]:
        return render_with(local_synthesizer(language or local_voice, local_voice, plan.route), text, local_voice)

    return plan_steps(plan, measures=Measures(characters=len(text)), max_eur=max_eur, local_call=local,
                      remote_call=remote)


def speech_render(*, text: str, voice: str | None = None) -> tuple[RenderedAudio, bool]:
    """`text` spoken as MP3 (a RenderedAudio), from the cache when it was rendered before.

    Returns (rendered, from_cache)."""
    if len(text) > MAX_RENDER_CHARS:
        raise TextTooLong(f"The text to speak has {len(text)} characters; at most {MAX_RENDER_CHARS} can be "
                          "rendered in one request.", details={"length": len(text), "maxLength": MAX_RENDER_CHARS})
    # A Piper voice by its name; a remote lane's voice by its lane; else the voice's
    # language ("de" of "de+f3") routes.
    current = registry_snapshot.current()  # read once: the voice's lane and the route
    language, local_voice = voice_language(voice or default_voice(), current)
    plan = tts_plan(language, voice, current=current)
    max_eur = settings.GATEWAY_MAX_EUR
    if not plan.calls_remote(max_eur):
        return render_with(local_synthesizer(language or local_voice, local_voice, plan.route), text, local_voice)
    ends_by = time.monotonic() + settings.GATEWAY_DEADLINE_SEC
    steps = render_steps(plan, text=text, language=language, local_voice=local_voice, max_eur=max_eur,
                         ends_by=ends_by)
    answer = speech_answer("tts", steps, ends_by=ends_by, max_eur=max_eur)
    rendered, from_cache = answer.result
    if not from_cache:  # a render from the cache asked no lane
        answered(answer, Measures(characters=len(text)), characters=len(text), audio_seconds=rendered.duration_sec)
    return rendered, from_cache


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


def local_recognizer(language: str, routed: Route | None = None) -> Recognizer:
    """This process's recognition engine for `language` (or "auto"), chosen like
    synthesis: the first lane of the registry's stt route (`routed`) whose engine runs
    in this process and serves that language here. Without a registry, or when no
    routed lane is served here: Vosk for the languages an operator configured in
    VOSK_MODELS, Whisper for every other language."""
    routed = routed or route("stt", language=None if language == AUTO_LANGUAGE else language)
    for candidate in routed.candidates:
        engine_id = local_engine_id(candidate.lane, RECOGNIZERS)
        if engine_id is not None and recognizer(engine_id).serves(language):
            return recognizer(engine_id)
    vosk = recognizer("vosk")
    return vosk if vosk.serves(language) else recognizer()


def recognizer_for(language: str) -> Recognizer:
    """The recognition engine for `language` (or "auto"): this process's
    (local_recognizer) when no remote lane can be called, else a LaneRecognizer that
    tries the registry's stt lanes in order, remote speech servers among them, with
    this process's engines as the fallback."""
    plan = stt_plan(language)
    if not plan.calls_remote(settings.GATEWAY_MAX_EUR):
        return local_recognizer(language, plan.route)
    return LaneRecognizer(plan, local=lambda: local_recognizer(language, plan.route))


def audio_transcribe(*, audio: bytes, language: str | None = None, default_language: str = DEFAULT_LANGUAGE,
                     phrases: list[str] | None = None) -> Transcript:
    """A Transcript of `audio` (bytes of any accepted format) in `language`
    (`default_language` when None; "auto" lets Whisper detect it).

    Client mistakes are reported before the server's state: a malformed language,
    empty, oversized or undecodable audio answer the same with or without a model;
    a missing model (503) only for audio that could be recognised. Recognition runs
    against a deadline derived from the audio's length (503 `stt_busy` past it),
    whichever lane does it."""
    language = checked_language(language, default=default_language)
    if not audio:
        raise EmptyAudio()
    decoded = decode_to_pcm(audio)
    engine = recognizer_for(language)
    return engine.transcribe(decoded.pcm, language=language, phrases=phrases or None,
                             deadline=Deadline.for_audio(decoded.duration_sec))


# --- Streaming speech lanes (speech_app.streaming) -------------------------------------

def lane_voice(voice: str | None) -> tuple[str, str] | None:
    """(lane id, voice) of a voice named `<lane>:<voice>`, None for a bare voice (which
    keeps its meaning: a Piper voice, an eSpeak NG voice, a remote lane's listed voice)."""
    lane_id, colon, name = (voice or "").partition(":")
    return (lane_id, name) if colon and lane_id and name else None


def _streaming_lane(lane_id: str, capability: str, current: object = UNREAD) -> SnapshotLane:
    snapshot = registry_snapshot.current() if current is UNREAD else cast(Snapshot | None, current)
    lane = snapshot.by_id.get(lane_id) if snapshot is not None else None
    if lane is None or lane.capability != capability:
        raise LaneFailure("unavailable", f"the registry has no {capability} lane {lane_id}")
    if lane.status not in USABLE_STATUSES:
        raise LaneFailure("unavailable", f"lane {lane_id} is {lane.status}")
    return lane


def _cooling(lane_id: str) -> LaneCooldown | None:
    """The lane's cooldown while it lasts (the lanes' state keeps ended ones too, until an answer clears them)."""
    return active_cooldowns().get(lane_id)


def streaming_synthesizer_for(voice: str | None, *, current: object = UNREAD) -> StreamingSynthesizer | None:
    """The streaming synthesiser of a voice named `<lane>:<voice>` whose lane streams,
    None for any other voice (a batch lane's voice is spoken by its bare name through
    synthesizer_for); LaneFailure when that lane cannot be called now (no key,
    not usable, no such voice), which the caller answers with the local engines."""
    named = lane_voice(voice)
    if named is None:
        return None
    lane = _streaming_lane(named[0], "tts", current)
    if protocol_module(lane) is None:
        return None
    voices = (lane.entry.get("params") or {}).get("voices") or []
    if named[1] not in voices:
        raise LaneFailure("unavailable", f"lane {lane.id} has no voice {named[1]}")
    return cast(StreamingSynthesizer, streaming_engine(lane, voice=named[1]))


def streaming_recognizer_for(lane_id: str, *, current: object = UNREAD) -> StreamingRecognizer:
    """The streaming recogniser of an stt lane; LaneFailure when it cannot be called now
    (no key, not usable, cooling down after a failure)."""
    lane = _streaming_lane(lane_id, "stt", current)
    cooldown = _cooling(lane.id)
    if cooldown is not None:
        raise LaneFailure("cooldown", f"lane {lane.id} cools down: {cooldown.reason}")
    return cast(StreamingRecognizer, streaming_engine(lane))


def streaming_speech_step(lane_id: str, *, characters: int, current: object = UNREAD) -> Step:
    """The Step of one streaming synthesis of `characters` on a lane, for its usage and
    cooldown (registry_app.lanes.outcomes); LaneFailure `cooldown` while the lane cools
    down. A lane an assistant names is the operator's choice (its key set, the assistant
    naming it): GATEWAY_MAX_EUR, the budget of the router's own choice of paid lanes,
    does not gate it; its use is counted at its price."""
    lane = _streaming_lane(lane_id, "tts", current)
    cooldown = _cooling(lane.id)
    if cooldown is not None:
        raise LaneFailure("cooldown", f"lane {lane.id} cools down: {cooldown.reason}")
    return Step(lane, "api", estimate_eur=lane_cost(lane, Measures(characters=characters)))


def streaming_speech_done(step: Step, *, characters: int, audio_seconds: float) -> None:
    """A streaming synthesis answered: counted in the lane's usage like a batch lane's."""
    record_success(step, step.estimate_eur, characters=characters, audio_seconds=audio_seconds)


def streaming_speech_failed(step: Step, failure: LaneFailure) -> None:
    """A streaming synthesis failed: a failure in the lane's usage, and its cooldown when unwell."""
    _speech_failed(step, failure)


def _speech_failed(step: Step, failure: LaneFailure) -> None:
    """A named speech lane's failure: counted, and a cooldown when the lane is unwell — or
    when the provider refused its key (401/403): that will not mend within a call, and the
    cooldown's reason is where the lane's status shows the error (the router's
    `excluded`, /v1/ready, the admin's lanes) while the local engines speak and hear."""
    record_failure(step, failure, key_cools_down=True)


def streaming_recognition_done(lane_id: str, *, audio_seconds: float, failure: LaneFailure | None = None) -> None:
    """A call's streaming recognition ended: the audio it sent counted in the lane's usage
    (audio minutes, at its price), and its failure, with a cooldown when the lane is unwell."""
    snapshot = registry_snapshot.current()
    lane = snapshot.by_id.get(lane_id) if snapshot is not None else None
    if lane is None:
        return
    step = Step(lane, "api")
    if audio_seconds > 0:
        record_success(step, lane_cost(lane, Measures(audio_seconds=audio_seconds)), audio_seconds=audio_seconds)
    if failure is not None:
        _speech_failed(step, failure)


def recognition_cost(lane_id: str) -> Callable[[float], float]:
    """The euros of so many seconds of audio sent to a streaming stt lane, at its price
    (registry_app.lanes.cost; 0 for a lane the registry does not have)."""
    snapshot = registry_snapshot.current()
    lane = snapshot.by_id.get(lane_id) if snapshot is not None else None
    if lane is None:
        return lambda seconds: 0.0
    return lambda seconds: lane_cost(lane, Measures(audio_seconds=seconds))


def voice_agent_for(lane_id: str, *, current: object = UNREAD) -> VoiceAgent:
    """The speech-to-speech engine of a voice-agent lane (an assistant's `realtime`);
    LaneFailure when it cannot be called now (no key, not usable, cooling down after a
    failure): the conversation core's pipeline answers instead."""
    lane = _streaming_lane(lane_id, "voice-agent", current)
    cooldown = _cooling(lane.id)
    if cooldown is not None:
        raise LaneFailure("cooldown", f"lane {lane.id} cools down: {cooldown.reason}")
    return cast(VoiceAgent, streaming_engine(lane))

