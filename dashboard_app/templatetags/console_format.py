"""Filters for the console's pages: numbers and choice labels as operators read them."""
from django import template
from django.utils.translation import pgettext

from console.admin_display import phone_cell

register = template.Library()


@register.filter
def phone(e164):
    """`+4930901820` → `030 901820 +4930901820` (national, E.164 small beside it)."""
    return phone_cell(e164)


@register.filter
def choice(instance, field):
    return pgettext("choice", getattr(instance, f"get_{field}_display")())
