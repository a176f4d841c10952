from django.apps import AppConfig


class LeadsAppConfig(AppConfig):
    name = "leads_app"
