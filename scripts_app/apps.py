from django.apps import AppConfig


class ScriptsAppConfig(AppConfig):
    name = "scripts_app"
    verbose_name = "Scripts"

    def ready(self):
        from scripts_app import checks  # noqa: F401  (registers the system checks)
