"""The blocking steps of a conversation — what the agent says first, hearing and
speaking — each run in a worker thread by the conversation core, never on the event
loop (thinking is the assistant's mind, agent_app/mind.py)."""
from dataclasses import dataclass

from django.conf import settings

from scripts_app.selectors import effective_script
from scripts_app.services import effective_text
from speech_app.services import local_recognizer, recognizer_for, synthesizer_for
from speech_app.stt import Deadline

OPENING_TOUCHPOINT = "inbound.greeting"


@dataclass(frozen=True)
class Opening:
    disclosure: str  # spoken first and in full: barge-in waits until it was heard
    text: str  # the whole opening, the disclosure first


def opening(*, tenant, variables):
    """The assistant's opening script as the tenant has it, the disclosure prepended
    (scripts_app, as for every call opener). MissingVariables (400) if the script names
    a variable without a value; the tenant's name is `companyName` unless given."""
    script = effective_script(tenant, OPENING_TOUCHPOINT)
    text = effective_text(script, variables={"companyName": tenant.name, **variables},
                          disclosure=tenant.disclosure_text)
    return Opening(disclosure=tenant.disclosure_text.strip(), text=text)


def voicemail_text(*, tenant, touchpoint, variables, callback_number=""):
    """What an answering machine is told for a campaign (its voicemail touchpoint, the
    disclosure first where the script opens a call): `companyName` is the tenant's and
    `callbackNumber` the number we called from unless the contact's variables name them.
    MissingVariables (400) if the script needs one more."""
    script = effective_script(tenant, touchpoint)
    return effective_text(script, variables={"companyName": tenant.name, "callbackNumber": callback_number,
                                             **(variables or {})}, disclosure=tenant.disclosure_text)


def hear(pcm, *, language):
    """What the caller said in `pcm` (16 kHz PCM), by the engine that serves the language."""
    engine = recognizer_for(language)
    # No HTTP worker waits here, so the deadline is the agent's own; past it the caller
    # gets stt_busy for this utterance and the conversation goes on.
    return engine.transcribe(pcm, language=language, deadline=Deadline(settings.AGENT_STT_DEADLINE_SEC)).text.strip()


def get_ready(*, language):
    """Loads this process's recognition model while the opening is spoken (the first
    session of a process would otherwise wait for it at the caller's first words). Also
    where a remote speech server hears first: the model is its fallback, and the
    server is not asked to hear a second of silence for every session."""
    engine = local_recognizer(language)
    engine.transcribe(b"\0" * 16000, language=language, deadline=Deadline(60))


def speak(text, *, language, voice, wire):
    """`text` spoken, in the session's wire format."""
    speech = synthesizer_for(language, voice=voice).synthesize(text, voice=voice or language)
    return wire.from_pcm(speech.pcm, speech.sample_rate)
