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
