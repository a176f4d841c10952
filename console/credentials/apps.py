from django.apps import AppConfig


class CredentialsConfig(AppConfig):
    name = "console.credentials"
    label = "credentials"
    verbose_name = "Credentials"

    def ready(self):
        # Registers the API key scheme with drf-spectacular (discovered on import).
        from console.credentials import schema  # noqa: F401
