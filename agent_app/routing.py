"""The WebSocket paths of the voice agent (console/asgi.py mounts them by name): the
browser's, and the Media Streams of Twilio-compatible carriers."""
from django.urls import path

from agent_app.consumer import AgentConsumer
from agent_app.twilio_stream import TwilioStreamConsumer

websocket_urlpatterns = [
    path("api/voice/agent", AgentConsumer.as_asgi()),
    path("voice/twilio/<str:carrier_id>/stream", TwilioStreamConsumer.as_asgi()),
]
