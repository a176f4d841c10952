"""The blocking steps of a conversation — what the agent says first, hearing and
speaking — each run in a worker thread by the conversation core, never on the event
loop (thinking is the assistant's mind, agent_app/mind.py)."""
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import cast

from django.conf import settings

from agent_app.audio import WireFormat
from agent_app.spend import CallSpend
from console.assistants.models import Assistant
from console.tenants.models import Tenant
from registry_app.lanes.failover import LaneFailure
from scripts_app.selectors import TENANT, EffectiveScript, effective_script
from scripts_app.services import effective_text, sample_variables
from speech_app.services import (
    lane_voice,
    local_recognizer,
    recognizer_for,
    streaming_recognizer_for,
    streaming_speech_done,
    streaming_speech_failed,
    streaming_speech_step,
    streaming_synthesizer_for,
    synthesizer_for,
)
from speech_app.smart_turn import smart_turn
from speech_app.streaming import CallAudio, Encoding, SpeechTurn, StreamingRecognizer, StreamingSynthesizer
from speech_app.stt import Deadline

OPENING_TOUCHPOINT = "inbound.greeting"
logger = logging.getLogger("agent_app")
# Said right after the AI disclosure when the call is recorded: recording a call unannounced
# is an offence in Germany (§ 201 StGB), and Art. 13 GDPR needs the notice at the start.
RECORDING_NOTICE = "Dieses Gespräch wird aufgezeichnet."


@dataclass(frozen=True)
class Opening:
    disclosure: str  # spoken first and in full: barge-in waits until it was heard
    text: str  # the whole opening, the disclosure first


def disclosure(*, tenant: Tenant, recorded: bool = False) -> str:
    """What every caller hears first: the tenant's AI disclosure, and where the call is
    recorded RECORDING_NOTICE (the one place every transport's opening takes it from)."""
    text = tenant.disclosure_text.strip()
    return f"{text} {RECORDING_NOTICE}" if recorded else text


def opening_script(*, tenant: Tenant, assistant: Assistant | None = None) -> EffectiveScript:
    """What the call opens with after the disclosure: the assistant's own greeting where it
    has one, else its opening touchpoint's script as the tenant has it (inbound.greeting
    without an assistant)."""
    if assistant is not None and assistant.greeting.strip():
        tp = effective_script(tenant, assistant.opening_touchpoint)  # its length budget
        return EffectiveScript(tp.touchpoint_id, assistant.greeting.strip(), TENANT, tp.max_seconds, True)
    return effective_script(tenant, assistant.opening_touchpoint if assistant is not None else OPENING_TOUCHPOINT)


def opening(*, tenant: Tenant, variables: Mapping[str, str], assistant: Assistant | None = None,
            recorded: bool = False) -> Opening:
    """The opening (opening_script) with the disclosure prepended (scripts_app, as for
    every call opener; with the recording notice where the call is recorded).
    MissingVariables (400) if the script names a variable without a value; the tenant's
    name is `companyName` unless given."""
    script = opening_script(tenant=tenant, assistant=assistant)
    said_first = disclosure(tenant=tenant, recorded=recorded)
    text = effective_text(script, variables={"companyName": tenant.name, **variables}, disclosure=said_first)
    return Opening(disclosure=said_first, text=text)


def first_heard(assistant: Assistant) -> str:
    """What a caller of `assistant` hears first as the admin shows it: the disclosure
    (with the recording notice where the tenant records calls), then its greeting or
    opening script, sample values for the variables (scripts_app's play button's)."""
    tenant = assistant.tenant
    script = opening_script(tenant=tenant, assistant=assistant)
    values = {**sample_variables(script.text), "companyName": tenant.name}
    return effective_text(script, variables=values,
                          disclosure=disclosure(tenant=tenant, recorded=tenant.recording_enabled))


def voicemail_text(*, tenant: Tenant, touchpoint: str, variables: Mapping[str, str] | None,
                   callback_number: str = "") -> str:
    """What an answering machine is told for a campaign (its voicemail touchpoint, the
    disclosure first where the script opens a call): `companyName` is the tenant's and
    `callbackNumber` the number we called from unless the contact's variables name them.
    MissingVariables (400) if the script needs one more."""
    script = effective_script(tenant, touchpoint)
    return effective_text(script, variables={"companyName": tenant.name, "callbackNumber": callback_number,
                                             **(variables or {})}, disclosure=tenant.disclosure_text)


def hear(pcm: bytes, *, language: str, phrases: list[str] | None = None) -> str:
    """What the caller said in `pcm` (16 kHz PCM, one utterance), by the engine that
    serves the language; `phrases` the assistant's vocabulary (Whisper's prompt)."""
    engine = recognizer_for(language)
    # No HTTP worker waits here, so the deadline is the agent's own; past it the caller
    # gets stt_busy for this utterance and the conversation goes on.
    return engine.hear(pcm, language=language, deadline=Deadline(settings.AGENT_STT_DEADLINE_SEC),
                       phrases=phrases).text.strip()


def draft(pcm: bytes, *, language: str) -> str | None:
    """A partial transcript of the utterance so far, or None when the engines are busy
    (a draft never waits for one)."""
    transcript = recognizer_for(language).hear(pcm, language=language, deadline=Deadline(DRAFT_DEADLINE_SEC),
                                                draft=True)
    return transcript.text.strip() if transcript is not None else None


# A draft later than this is of no use any more: the caller has said more meanwhile.
DRAFT_DEADLINE_SEC = 5


def get_ready(*, language: str) -> None:
    """Loads this process's recognition model and the end-of-turn model while the
    opening is spoken (the first session of a process would otherwise wait for them at
    the caller's first words). Also where a remote speech server hears first: the model
    is its fallback, and the server is not asked to hear a second of silence for every
    session."""
    engine = local_recognizer(language)
    engine.hear(b"\0" * 16000, language=language, deadline=Deadline(60))
    smart_turn().available  # noqa: B018 - loads (and verifies) it, or logs why not


# on_stream(cancel) -> forget: a streaming provider's cancel, called at barge-in from
# another thread (agent_app.speaking.Lines.on_stop); `forget()` once its answer is whole.
OnStream = Callable[[Callable[[], None]], Callable[[], None]]


class TurnSpeech:
    """The streaming synthesisers' turns of one agent turn (agent_app.speaking keeps one
    per turn): the turn's sentences that a lane speaks go to one `SpeechTurn` of it, so
    that a provider that keeps a turn in one context (Cartesia) hears them there; `close`
    at the turn's end (a whole turn, or one cut off by barge-in)."""

    def __init__(self) -> None:
        self._turns: dict[tuple[str, str, CallAudio, str], SpeechTurn] = {}

    def of(self, engine: StreamingSynthesizer, *, audio: CallAudio, language: str) -> SpeechTurn:
        key = (engine.lane_id, engine.voice, audio, language)  # a new engine per sentence: its lane and voice
        if key not in self._turns:
            self._turns[key] = engine.open_turn(audio=audio, language=language)
        return self._turns[key]

    def close(self) -> None:
        for turn in self._turns.values():
            turn.close()
        self._turns.clear()


def speak(text: str, *, language: str, voice: str, wire: WireFormat,
          on_note: Callable[[str], None] | None = None, on_stream: OnStream | None = None,
          spend: CallSpend | None = None, turn: TurnSpeech | None = None) -> Iterator[bytes]:
    """`text` spoken sentence by sentence, in the session's wire format: an iterator of
    audio, so that the first sentence can be sent while the next is being made.

    A voice named `<lane>:<voice>` whose lane streams (speech_app.streaming: Azure, …) is
    asked for the wire's own encoding and its audio handed on as it arrives; closing the
    iterator (barge-in) cancels it at the provider, and so does `on_stream`'s cancel at once,
    while the provider is still making the audio; the sentences of one agent turn share
    its `turn` (without one, `text` is a turn of its own). When that lane cannot be called, is
    past the call's budget (`spend`), or fails (connect error, 4xx/5xx, no audio for
    SYNTHESIS_STALL_SECONDS) the next lane of the plan speaks the sentence — the
    router's lanes for the language (paid ones within GATEWAY_MAX_EUR), the local voice
    last — and `on_note` gets a note for the transcript; a sentence cut off mid-way is
    spoken again whole."""
    named = lane_voice(voice)
    bare = named[1] if named else voice
    try:
        streaming = streaming_synthesizer_for(voice)
    except LaneFailure as failure:
        streaming = None
        _noted(on_note, lane_note("tts", named[0] if named else voice, failure))
        bare = language
    if streaming is not None:
        if (yield from _streamed(streaming, text, language=language, wire=wire, on_note=on_note,
                                 on_stream=on_stream, spend=spend, turn=turn)):
            return
        bare = language
    engine = synthesizer_for(language, voice=bare)
    for speech in engine.stream(text, voice=bare or language):
        yield wire.from_pcm(speech.pcm, speech.sample_rate)


# The transcript's notes when a named speech lane is not used or fails, by capability.
_LANE_ROLES = {"tts": ("Sprachausgabe", "die lokale Stimme spricht"),
               "stt": ("Spracherkennung", "die lokale Spracherkennung hört")}


def lane_note(capability: str, lane_id: str, failure: LaneFailure, *, cut: bool = False) -> str:
    """The transcript's note (German, as every system line) of a speech lane that the
    local engines replace: why (its LaneFailure's outcome), and who takes over."""
    role, takes_over = _LANE_ROLES[capability]
    if failure.outcome == "over_budget":
        return f"{role} {lane_id}: das Budget des Gesprächs ist aufgebraucht ({failure.detail}), {takes_over}."
    what = "ausgefallen" if failure.outcome not in ("unavailable", "no_key", "cooldown") else "nicht nutzbar"
    again = " den Satz noch einmal" if cut else ""
    return f"{role} {lane_id} {what} ({failure.outcome}): {takes_over}{again}."


def _noted(on_note: Callable[[str], None] | None, note: str) -> None:
    logger.warning("%s", note)
    if on_note is not None:
        on_note(note)


def _streamed(engine: StreamingSynthesizer, text: str, *, language: str, wire: WireFormat,
              on_note: Callable[[str], None] | None, on_stream: OnStream | None,
              spend: CallSpend | None, turn: TurnSpeech | None) -> Generator[bytes, None, bool]:
    """The audio of a streaming synthesiser in the wire's encoding (whole samples);
    whether it spoke the whole text (False: the caller has the next lane speak it, also
    after a part that broke off). Its use is counted in the lane's usage and the call's
    spend, a failure too (with a cooldown when the lane is unwell, or its key was
    refused); a lane cooling down is not asked (its failure was noted when it happened)."""
    given, stream, carry, sent, forget = False, None, b"", 0, None
    try:
        step = streaming_speech_step(engine.lane_id, characters=len(text))
        if spend is not None and not spend.take(step.estimate_eur):
            raise LaneFailure("over_budget", f"{spend.spent:.4f} von {spend.max_eur:g} EUR")
    except LaneFailure as failure:
        quiet = failure.outcome == "cooldown" or (  # noted when it failed, or when the budget first refused it
            failure.outcome == "over_budget" and spend is not None and not spend.first_refusal(engine.lane_id))
        if quiet:
            logger.info("Speech lane %s not asked: %s", engine.lane_id, failure.detail)
        else:
            _noted(on_note, lane_note("tts", engine.lane_id, failure))
        return False
    try:
        audio = call_audio(wire)
        stream = (turn.of(engine, audio=audio, language=language).speak(text) if turn is not None
                  else engine.speak(text, audio=audio, language=language))
        forget = on_stream(stream.cancel) if on_stream is not None else None
        for chunk in stream.chunks():
            data = carry + chunk
            cut = len(data) - len(data) % wire.sample_bytes
            data, carry = data[:cut], data[cut:]
            if data:
                given, sent = True, sent + len(data)
                yield data
        streaming_speech_done(step, characters=len(text), audio_seconds=sent / wire.bytes_per_second)
        return given  # an answer without audio is spoken by the next lane
    except LaneFailure as failure:
        streaming_speech_failed(step, failure)
        _noted(on_note, lane_note("tts", engine.lane_id, failure, cut=given))
        return False
    finally:
        if forget is not None:
            forget()
        if stream is not None:
            stream.cancel()  # a no-op after the whole answer; at barge-in the provider stops


def transcriber(lane_id: str) -> StreamingRecognizer:
    """The streaming recogniser of an assistant's transcriber lane; LaneFailure when it
    cannot be called now (no key, not usable): the local engines hear."""
    return streaming_recognizer_for(lane_id)


def call_audio(wire: WireFormat) -> CallAudio:
    """The call's audio as a provider is asked for it (the wire's own encoding)."""
    return CallAudio("linear16" if wire.encoding == "pcm_s16le" else cast(Encoding, wire.encoding), wire.sample_rate)


def speak_whole(text: str, *, language: str, voice: str, wire: WireFormat, spend: CallSpend | None = None) -> bytes:
    """`text` spoken, all of it at once (what must be heard out, such as the goodbye at a
    grant's end)."""
    return b"".join(speak(text, language=language, voice=voice, wire=wire, spend=spend))


# The openings spoken lately, by their exact text, voice, engine version and wire
# format: the same script (and variables) is synthesised once per process, not per call.
OPENING_CACHE_ENTRIES = 32
_openings: OrderedDict[tuple[object, ...], tuple[bytes, ...]] = OrderedDict()
_openings_lock = threading.Lock()


def opening_audio(text: str, *, language: str, voice: str, wire: WireFormat,
                  on_note: Callable[[str], None] | None = None, on_stream: OnStream | None = None,
                  spend: CallSpend | None = None, turn: TurnSpeech | None = None) -> Iterator[bytes]:
    """The audio of an opening sentence by sentence (like speak), made once per script
    version, voice and engine and kept in memory (the newest OPENING_CACHE_ENTRIES); the
    first time, each sentence is handed on as soon as it is made. A voice of a named lane
    (`<lane>:<voice>`) is not kept: the lane or, when it fails, the local engines speak it."""
    if lane_voice(voice) is not None:
        yield from speak(text, language=language, voice=voice, wire=wire, on_note=on_note, on_stream=on_stream,
                         spend=spend, turn=turn)
        return
    engine = synthesizer_for(language, voice=voice)
    key = (text, voice or language, type(engine).__name__, engine.version, wire)
    with _openings_lock:
        cached = _openings.get(key)
        if cached is not None:
            _openings.move_to_end(key)
    if cached is not None:
        yield from cached
        return
    made: list[bytes] = []
    for audio in speak(text, language=language, voice=voice, wire=wire):
        made.append(audio)
        yield audio
    with _openings_lock:  # only when every sentence was made (a caller may hang up first)
        _openings[key] = tuple(made)
        while len(_openings) > OPENING_CACHE_ENTRIES:
            _openings.popitem(last=False)
