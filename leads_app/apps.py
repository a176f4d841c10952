from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class LeadsAppConfig(AppConfig):
    name = "leads_app"
    verbose_name = _("Leads and callbacks")
