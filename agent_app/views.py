"""The voice agent's session API: POST /api/voice/agent/sessions."""
from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response

from agent_app.serializers import SessionRequestSerializer, SessionSerializer
from agent_app.services import agent_session_create
from console.api import TenantAPIView, validated
from console.openapi import errors

WEBSOCKET_PATH = "/api/voice/agent"


def websocket_url(request, token):
    """Where the client opens the conversation: AGENT_WS_URL when the WebSocket is served
    elsewhere (make run's second port), else this request's own host."""
    base = settings.AGENT_WS_URL.rstrip("/") or f"{'wss' if request.is_secure() else 'ws'}://{request.get_host()}"
    return f"{base}{WEBSOCKET_PATH}?token={token}"


class AgentSessionView(TenantAPIView):
    @extend_schema(request=SessionRequestSerializer, responses={201: SessionSerializer}, extensions=errors(402),
                   summary="Grant a voice agent session: checks the minute cap, reserves minutes, issues a token")
    def post(self, request):
        data = validated(SessionRequestSerializer, request.data)
        audio = data.get("audio") or {"encoding": "pcm_s16le", "sampleRate": 16000}
        session, token = agent_session_create(
            tenant=request.tenant, assistant_id=data.get("assistant", ""), language=data.get("language"),
            variables=data["variables"], encoding=audio["encoding"], sample_rate=audio["sampleRate"])
        grant = {"session": session, "token": token, "url": websocket_url(request, token)}
        return Response(SessionSerializer(grant).data, status=status.HTTP_201_CREATED)
