from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class CampaignsAppConfig(AppConfig):
    name = "campaigns_app"
    verbose_name = _("Campaigns")

    def ready(self):
        # The carrier's answering-machine verdict reaches the campaign through the hook
        # calls_app offers (calls_app cannot import us: we sit above it).
        from calls_app.dialing import register_machine_listener
        from campaigns_app.outcomes import machine_answered

        register_machine_listener(machine_answered)
