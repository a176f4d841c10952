"""How the admin shows times, numbers and choice labels to a German operator.

Times: in the time zone the request activated (console/locale.py: the tenant's), in
the active language's short format (`23.11.2026 09:00`). Numbers: national format
with the stored E.164 beside it. Choice labels of models that keep English labels in
their migrations are translated here through the project's locale.
"""
from django.utils import formats, timezone
from django.utils.functional import lazy
from django.utils.html import format_html
from django.utils.translation import pgettext

from console.phone import national


def local_datetime(moment):
    if moment is None:
        return "—"
    return formats.date_format(timezone.localtime(moment), "SHORT_DATETIME_FORMAT")


def phone_cell(e164):
    """`030 901820` with `+4930901820` small beside it."""
    if not e164:
        return "—"
    shown = national(e164)
    if shown == e164:
        return e164
    return format_html('{} <small class="e164">{}</small>', shown, e164)


def choice_label(instance, field):
    """The translated label of a choice field's value (`Completed` → `Beendet`); the
    context keeps these apart from Django's own texts (its "Active" is another word)."""
    return pgettext("choice", getattr(instance, f"get_{field}_display")())


def minutes_seconds(seconds):
    minutes, rest = divmod(seconds or 0, 60)
    return f"{minutes}:{rest:02d}"


def format_lazy_percent(text, **values):
    """`text % values`, formatted each time it is shown (in the active language): for
    labels made at import time, such as an action's description."""
    return lazy(lambda: str(text) % {name: str(value) for name, value in values.items()}, str)()
