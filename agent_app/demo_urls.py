from django.urls import path

from agent_app import demo_views

urlpatterns = [
    path("voice-demo", demo_views.voice_demo_page, name="voice-demo"),
    path("voice-demo/session", demo_views.voice_demo_session, name="voice-demo-session"),
    path("voice-demo/<str:name>", demo_views.demo_script, name="voice-demo-script"),
]
