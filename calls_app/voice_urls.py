from django.urls import path

from calls_app.voice_views import CarrierWebhookView, OutboundCallView

urlpatterns = [
    path("v1/calls", OutboundCallView.as_view(), name="voice-outbound-calls"),
    path("webhook/<str:carrier_id>", CarrierWebhookView.as_view(), name="voice-webhook"),
]
