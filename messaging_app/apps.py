from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MessagingAppConfig(AppConfig):
    name = "messaging_app"
    verbose_name = _("SMS")

    def ready(self) -> None:
        # The cap per tenant and day counts the tenant's SMS of today (console.quotas).
        from console.quotas import register_usage
        from messaging_app.selectors import sms_today_count

        register_usage("smsPerDay", sms_today_count)

        # The assistant's `send_sms`: its effect, the SMS, is ours.
        from console.assistants.builtin_tools import register_builtin_tool
        from messaging_app.builtin_tools import SEND_SMS

        register_builtin_tool(SEND_SMS)
