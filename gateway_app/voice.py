"""The voice gateway's plans: /v1/speak and /v1/transcribe through the registry's tts
and stt lanes, exactly as render, transcription and the agent use them.

The plans, the remote speech lanes (the OpenAI audio API) and the calls are
speech_app's (speech_app.lanes, speech_app.services): the gateway sits above it and
only runs the steps through its own loop (gateway_app.services.answer_through), which
adds what its paths promise — every attempt reported, the budget of the request
(`max_eur`), 503 `no_lane_answered` / 422 `over_budget`, and the usage of every lane,
this process's engines too.

One rule is the gateway's own: a local lane that is degraded or in a cooldown is
respected (render, transcription and the agent always keep this process's engines
as their fallback).
"""
import time

from django.conf import settings

from registry_app import snapshot
from registry_app.lanes.cost import Measures
from speech_app.lanes import stt_plan, transcribe_steps, tts_plan
from speech_app.services import local_recognizer, render_steps, voice_language
from speech_app.tts import default_voice


def speak_steps(*, text, voice, language, max_eur):
    """The Steps of /v1/speak, each answering (RenderedAudio, from_cache). Without
    `voice` the language is the voice (eSpeak NG names its voices by language); without
    both, SPEECH_DEFAULT_VOICE."""
    current = snapshot.current()
    spoken_language, local_voice = voice_language(voice or language or default_voice(), current)
    language = language or spoken_language
    plan = tts_plan(language, voice, always_local=False, current=current)
    return render_steps(plan, text=text, language=language, local_voice=local_voice, max_eur=max_eur,
                        ends_by=time.monotonic() + settings.GATEWAY_DEADLINE_SEC)


def transcribe_steps_for(pcm, *, language, phrases, seconds, max_eur):
    """The Steps of /v1/transcribe, each answering a Transcript."""
    plan = stt_plan(language, always_local=False)
    return transcribe_steps(plan, pcm, language=language, phrases=phrases, measures=Measures(audio_seconds=seconds),
                            max_eur=max_eur, local=lambda: local_recognizer(language, plan.route))
