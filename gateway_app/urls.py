"""The AI gateway and the voice gateway, under /v1/ (model-hub-registry §4)."""
from django.urls import path

from gateway_app.openai_views import AudioSpeechView, AudioTranscriptionsView, ModelsView, ModelView
from gateway_app.views import (
    AgentView,
    ChatCompletionsView,
    ReadyView,
    SpeakView,
    TranscribeView,
    UsageView,
)

urlpatterns = [
    path("agent", AgentView.as_view(), name="gateway-agent"),
    path("chat/completions", ChatCompletionsView.as_view(), name="gateway-chat-completions"),
    path("models", ModelsView.as_view(), name="gateway-models"),
    # A model's name may hold `/` and `:` (`meta-llama/Llama-3.1-8B`, `llama3.1:8b`).
    path("models/<path:model>", ModelView.as_view(), name="gateway-model"),
    path("audio/transcriptions", AudioTranscriptionsView.as_view(), name="gateway-audio-transcriptions"),
    path("audio/speech", AudioSpeechView.as_view(), name="gateway-audio-speech"),
    path("ready", ReadyView.as_view(), name="gateway-ready"),
    path("usage", UsageView.as_view(), name="gateway-usage"),
    path("speak", SpeakView.as_view(), name="gateway-speak"),
    path("transcribe", TranscribeView.as_view(), name="gateway-transcribe"),
]
