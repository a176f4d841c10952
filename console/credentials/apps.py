from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CredentialsConfig(AppConfig):
    name = "console.credentials"
    label = "credentials"
    verbose_name = _("Credentials")

    def ready(self):
        # Registers the API key scheme with drf-spectacular (discovered on import).
        from console.credentials import schema  # noqa: F401
