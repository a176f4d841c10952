from django.urls import path

from calls_app.voice_views import CarrierWebhookView, OutboundCallView, RecordingView

urlpatterns = [
    path("v1/calls", OutboundCallView.as_view(), name="voice-outbound-calls"),
    path("webhook/<str:carrier_id>", CarrierWebhookView.as_view(), name="voice-webhook"),
    path("recordings/<str:call_id>.mp3", RecordingView.as_view(), name="voice-recording"),
]
