"""The SMS texts: German templates with `{variables}` (a plain name each, no format
specs, no attribute or index access), and the rule of which numbers get an SMS."""
import re
import string
from collections.abc import Mapping

from django.utils.translation import gettext

from console.errors import ValidationFailed

# A sender's text is at most three concatenated SMS of GSM characters (3 x 153).
MAX_TEXT = 459
MAX_VALUE = 200
TEMPLATE_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
# German mobile numbers: 015x, 016x, 017x, i.e. +4915…, +4916…, +4917… with 10 or 11
# digits after the country code.
GERMAN_MOBILE = re.compile(r"\+491[5-7][0-9]{8,9}")
DEFAULT_TEMPLATES = {
    "confirmation": "{business}: Ihr Termin am {date} um {time} ist bestätigt. Zum Verschieben oder Absagen "
                    "rufen Sie uns einfach an.",
    "reminder": "{business}: Erinnerung an Ihren Termin morgen, {date}, um {time}. Bis dann!",
}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def is_german_mobile(e164: str) -> bool:
    return bool(GERMAN_MOBILE.fullmatch(e164))


def template_variables(text: str, *, field: str) -> list[str]:
    """The variables `text` names, or a 400 on `field` for what is not a plain `{name}`."""
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError:
        raise ValidationFailed.field(field, gettext("Braces only around variable names: {name}; a brace itself as {{ or }}.")) from None
    names = []
    for _literal, name, spec, conversion in parts:
        if name is None:
            continue
        if not VARIABLE.fullmatch(name) or spec or conversion:
            raise ValidationFailed.field(field, gettext("'{%(name)s}' is no variable name (letters, digits, _).") % {"name": name})
        names.append(name)
    return names


def templates_checked(templates: object) -> dict[str, str]:
    """The tenant's templates as sent: {name: text}, each text at most MAX_TEXT
    characters with plain `{variables}`."""
    if not isinstance(templates, dict) or len(templates) > 20:
        raise ValidationFailed.field("templates", gettext("An object {name: text} of at most 20 templates."))
    for name, text in templates.items():
        if not isinstance(name, str) or not TEMPLATE_NAME.fullmatch(name):
            raise ValidationFailed.field("templates", gettext("'%(name)s' is no template name (a–z, 0–9, _).") % {"name": name})
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
            raise ValidationFailed.field(f"templates.{name}", gettext("A text of 1 to %(max)d characters.") % {"max": MAX_TEXT})
        template_variables(text, field=f"templates.{name}")
    return dict(templates)


def sms_text(*, templates: Mapping[str, str], name: str, variables: Mapping[str, object]) -> str:
    """The text of template `name` (the tenant's, else the default) with `variables`
    put in; a 400 for an unknown template, a missing variable or a text too long."""
    text = templates.get(name) or DEFAULT_TEMPLATES.get(name)
    if text is None:
        known = ", ".join(sorted({*DEFAULT_TEMPLATES, *templates}))
        raise ValidationFailed.field("template", f"No template '{name}'. Templates: {known}.")
    values = {}
    for variable in template_variables(text, field="template"):
        value = variables.get(variable)
        if value is None or not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ValidationFailed.field(f"variables.{variable}", "The template needs this value (a text).")
        values[variable] = _CONTROL.sub(" ", str(value)).strip()[:MAX_VALUE]
    rendered = text.format_map(values)
    if len(rendered) > MAX_TEXT:
        raise ValidationFailed.field("variables", f"The text would be {len(rendered)} characters long (at most {MAX_TEXT}).")
    return rendered
