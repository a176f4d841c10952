from django.urls import path

from speech_app.views import AudioTranscribeView, EnginesView

urlpatterns = [
    path("audio/transcribe", AudioTranscribeView.as_view(), name="audio-transcribe"),
    path("meta/engines", EnginesView.as_view(), name="meta-engines"),
]
