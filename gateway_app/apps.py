from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class GatewayAppConfig(AppConfig):
    name = "gateway_app"
    verbose_name = _("AI and voice gateway")

    def ready(self):
        from gateway_app import checks, schema  # noqa: F401 - registers the settings checks, the OpenAPI scheme
        from gateway_app.services import lane_usage_add
        from registry_app.lanes.outcomes import register_usage_recorder

        # Every lane's use is counted here, also a remote speech lane's that render,
        # transcription or the agent called through speech_app (below the gateway).
        register_usage_recorder(lane_usage_add)
