from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CredentialsConfig(AppConfig):
    name = "console.credentials"
    label = "credentials"
    verbose_name = _("Credentials")

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        # Registers the API key scheme with drf-spectacular (discovered on import).
        from console.credentials import schema  # noqa: F401
        from console.credentials.models import ApiKey
        from console.credentials.verified import forget_saved_key, forget_saved_tenant
        from console.middleware import let_djangos_session_checks_see_our_middleware
        from console.tenants.models import Tenant

        let_djangos_session_checks_see_our_middleware()

        # Not business logic: the per-process cache of verified keys must not outlive a
        # change made through the ORM in this process (other processes: the bound in
        # console/credentials/verified.py).
        for signal in (post_save, post_delete):
            signal.connect(forget_saved_key, sender=ApiKey, dispatch_uid="forget-verified-key")
            signal.connect(forget_saved_tenant, sender=Tenant, dispatch_uid="forget-verified-tenant")
