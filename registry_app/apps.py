from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RegistryAppConfig(AppConfig):
    name = "registry_app"
    verbose_name = _("Engine registry")

    def ready(self):
        from registry_app import schema  # noqa: F401 - registers the probe credential's OpenAPI scheme
