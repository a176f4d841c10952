from django.urls import path

from scripts_app.views import AudioRenderView, ScriptDetailView, ScriptListView

urlpatterns = [
    path("audio/scripts", ScriptListView.as_view(), name="scripts"),
    path("audio/scripts/<str:touchpoint_id>", ScriptDetailView.as_view(), name="script"),
    path("audio/render", AudioRenderView.as_view(), name="audio-render"),
]
