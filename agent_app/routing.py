"""The WebSocket paths of the voice agent (console/asgi.py mounts them by name): the
browser's, and the media stream of every carrier kind that has one (calls_app/kinds),
`/voice/<kind>/<carrier_id>/stream`, all served by one consumer with the kind's codec."""
from django.urls import path

from agent_app.consumer import AgentConsumer
from agent_app.media_stream import MediaStreamConsumer
from calls_app.kinds import KINDS

websocket_urlpatterns = [
    path("api/voice/agent", AgentConsumer.as_asgi()),
    *(path(f"voice/{kind.name}/<str:carrier_id>/stream", MediaStreamConsumer.as_asgi(kind_name=kind.name))
      for kind in KINDS.values() if kind.codec is not None and kind.websocket),
]
