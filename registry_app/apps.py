from django.apps import AppConfig


class RegistryAppConfig(AppConfig):
    name = "registry_app"
