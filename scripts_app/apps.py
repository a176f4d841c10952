from django.apps import AppConfig


class ScriptsAppConfig(AppConfig):
    name = "scripts_app"
