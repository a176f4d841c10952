from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class NumbersConfig(AppConfig):
    name = "console.numbers"
    label = "numbers"
    verbose_name = _("Phone numbers")
