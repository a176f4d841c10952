from django.apps import AppConfig


class CallsAppConfig(AppConfig):
    name = "calls_app"
