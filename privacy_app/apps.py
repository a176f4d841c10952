"""Privacy by design: retention per tenant, access by caller (exports) and erasure by
caller (docs/privacy.md). The top layer, above calls_app, leads_app and campaigns_app."""
from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PrivacyConfig(AppConfig):
    name = "privacy_app"
    verbose_name = _("Privacy")

    def ready(self):
        # calls_app may not import us: it asks through its hook whether a late
        # call.started belongs to a caller whose data was erased.
        from calls_app.redaction import register_erased_caller_lookup
        from privacy_app.selectors import erased_caller_pseudonym

        register_erased_caller_lookup(erased_caller_pseudonym)

        from console.quotas import register_usage
        from privacy_app.models import Export

        register_usage("exports", lambda tenant: Export.objects.filter(tenant=tenant).count())
