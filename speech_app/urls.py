from django.urls import path

from speech_app.views import AudioTranscribeView, EnginesView, VoicesView

urlpatterns = [
    path("audio/transcribe", AudioTranscribeView.as_view(), name="audio-transcribe"),
    path("meta/engines", EnginesView.as_view(), name="meta-engines"),
    path("meta/voices", VoicesView.as_view(), name="meta-voices"),
]
