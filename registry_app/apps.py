from django.apps import AppConfig


class RegistryAppConfig(AppConfig):
    name = "registry_app"

    def ready(self):
        from registry_app import schema  # noqa: F401 - registers the probe credential's OpenAPI scheme
