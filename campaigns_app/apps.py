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

        # The objection (`opt_out`): its effect, the blocklist, is ours.
        from campaigns_app.builtin_tools import OPT_OUT
        from console.assistants.builtin_tools import register_builtin_tool

        register_builtin_tool(OPT_OUT)

        # What the tenant keeps, against its caps (console.quotas).
        from campaigns_app.models import BlockedNumber, Campaign, CampaignContact
        from console.quotas import register_usage

        register_usage("campaigns", lambda tenant: Campaign.objects.for_tenant(tenant).count())
        register_usage("contacts", lambda tenant: CampaignContact.objects.filter(tenant=tenant).count())
        register_usage("blocklist", lambda tenant: BlockedNumber.objects.for_tenant(tenant).count())
