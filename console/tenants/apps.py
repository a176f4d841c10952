from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "console.tenants"
    label = "tenants"
    verbose_name = "Tenants"
