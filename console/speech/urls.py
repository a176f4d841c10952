from django.urls import path

from console.speech.views import AudioRenderView, AudioSettingsView, AudioTranscribeView

urlpatterns = [
    path("audio/render", AudioRenderView.as_view(), name="audio-render"),
    path("audio/transcribe", AudioTranscribeView.as_view(), name="audio-transcribe"),
    path("audio/settings", AudioSettingsView.as_view(), name="audio-settings"),
]
