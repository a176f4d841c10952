from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ScriptsAppConfig(AppConfig):
    name = "scripts_app"
    verbose_name = _("Scripts")

    def ready(self):
        from scripts_app import checks  # noqa: F401  (registers the system checks)
