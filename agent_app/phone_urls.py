"""The phone bridges' HTTP paths under /voice/ (docs/telephony.md); their WebSocket is in routing.py."""
from django.urls import path

from agent_app.phone_views import AsteriskCallsView, AsteriskTransferView, TwilioIncomingView, TwilioStatusView

urlpatterns = [
    path("twilio/<str:carrier_id>/incoming", TwilioIncomingView.as_view(), name="voice-twilio-incoming"),
    path("twilio/<str:carrier_id>/status", TwilioStatusView.as_view(), name="voice-twilio-status"),
    path("asterisk/<str:carrier_id>/calls", AsteriskCallsView.as_view(), name="voice-asterisk-calls"),
    path("asterisk/<str:carrier_id>/calls/<str:call_uuid>/transfer", AsteriskTransferView.as_view(),
         name="voice-asterisk-transfer"),
]
