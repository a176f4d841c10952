from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class NumbersConfig(AppConfig):
    name = "console.numbers"
    label = "numbers"
    verbose_name = _("Phone numbers")

    def ready(self):
        from console.numbers.models import PhoneNumber
        from console.quotas import register_usage

        register_usage("numbers", lambda tenant: PhoneNumber.objects.for_tenant(tenant).count())
