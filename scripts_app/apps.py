from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ScriptsAppConfig(AppConfig):
    name = "scripts_app"
    verbose_name = _("Scripts")

    def ready(self):
        from console.warmup import at_worker_start
        from scripts_app import checks  # noqa: F401  (registers the system checks)
        from scripts_app.selectors import analyse_catalog_defaults

        # Reads the lexicon (the slow part) and analyses the catalog's scripts once per worker.
        at_worker_start(analyse_catalog_defaults)
