from django.urls import path

from agent_app.views import AgentSessionView

urlpatterns = [path("sessions", AgentSessionView.as_view(), name="voice-agent-sessions")]
