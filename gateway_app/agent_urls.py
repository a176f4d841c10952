"""The cloud agent, at /agent (model-hub-registry §1, §4)."""
from django.urls import path

from gateway_app.views import CloudAgentView

urlpatterns = [
    path("", CloudAgentView.as_view(), name="cloud-agent"),
]
