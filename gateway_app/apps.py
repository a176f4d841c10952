from django.apps import AppConfig


class GatewayAppConfig(AppConfig):
    name = "gateway_app"
    verbose_name = "AI and voice gateway"

    def ready(self):
        from gateway_app import checks, schema  # noqa: F401 - registers the settings checks, the OpenAPI scheme
