from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class GatewayAppConfig(AppConfig):
    name = "gateway_app"
    verbose_name = _("AI and voice gateway")

    def ready(self):
        from gateway_app import checks, schema  # noqa: F401 - registers the settings checks, the OpenAPI scheme
