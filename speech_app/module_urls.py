"""The hub's speech module (model-hub-registry §4), under /api/voice/."""
from django.urls import path

from speech_app.views import ModuleHealthView, ModuleTranscribeView, SpeakView

urlpatterns = [
    path("speak", SpeakView.as_view(), name="voice-speak"),
    path("transcribe", ModuleTranscribeView.as_view(), name="voice-transcribe"),
    path("health", ModuleHealthView.as_view(), name="voice-health"),
]
