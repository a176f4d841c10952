"""The WebSocket paths of the voice agent (console/asgi.py mounts them by name)."""
from django.urls import path

from agent_app.consumer import AgentConsumer

websocket_urlpatterns = [path("api/voice/agent", AgentConsumer.as_asgi())]
