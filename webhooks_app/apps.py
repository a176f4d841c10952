from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks_app"
    verbose_name = "Outbound webhooks"
