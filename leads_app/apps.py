from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LeadsAppConfig(AppConfig):
    name = "leads_app"
    verbose_name = _("Leads and callbacks")

    def ready(self):
        from console.quotas import register_usage
        from leads_app.models import Lead

        register_usage("leads", lambda tenant: Lead.objects.for_tenant(tenant).count())
