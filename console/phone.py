"""Phone numbers in E.164, parsed with libphonenumber (the `phonenumbers` package)."""
import re

import phonenumbers
from django.utils.translation import gettext, gettext_noop

DEFAULT_REGION = "DE"


class InvalidPhoneNumber(ValueError):
    """Its text is English (the API, the commands); `localized()` is the same message
    in the active language, for the admin's forms."""

    def __init__(self, message, **params):
        super().__init__(message % params if params else message)
        self.message, self.params = message, params

    def localized(self):
        text = gettext(self.message)
        return text % self.params if self.params else text


def to_e164(raw, *, region=DEFAULT_REGION):
    """`raw` in international or (German) national format as E.164, or InvalidPhoneNumber.

    National numbers such as `030 1234567` or `0171 2345678` are read as numbers of
    `region`; anything with a leading `+` or `00` is read as international.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidPhoneNumber(gettext_noop("Enter a phone number."))
    text = raw.strip()
    if any(ch.isalpha() for ch in text):
        raise InvalidPhoneNumber(gettext_noop("A phone number contains no letters."))
    try:
        parsed = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        raise InvalidPhoneNumber(gettext_noop("'%(raw)s' is not a phone number."), raw=raw) from None
    if not phonenumbers.is_valid_number(parsed):
        raise InvalidPhoneNumber(gettext_noop(
            "'%(raw)s' is not a valid phone number; use the international format, e.g. +49 30 1234567."), raw=raw)
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.E164)


MASK = "•"


def mask(e164):
    """A number as it may appear in logs and titles: the country and network part and
    the last two digits, the rest hidden (`+491712345667` → `+49171•••••67`).

    Short numbers keep less; anything else that is not empty (a pseudonym, garbage)
    is hidden whole: a log line never shows more than this."""
    if not isinstance(e164, str) or not e164:
        return ""
    if not (e164.startswith("+") and e164[1:].isdigit()):
        return MASK * 3
    digits = e164[1:]
    shown_head = 5 if len(digits) >= 10 else max(1, len(digits) - 6)
    shown_tail = 2 if len(digits) > shown_head + 2 else 0
    hidden = len(digits) - shown_head - shown_tail
    return "+" + digits[:shown_head] + MASK * hidden + digits[len(digits) - shown_tail:]


def national(e164):
    """A stored E.164 number as a German reader writes it (`+4930901820` → `030 901820`,
    foreign numbers in their international form); anything unparsable comes back as is."""
    try:
        parsed = phonenumbers.parse(e164, None)
    except phonenumbers.NumberParseException:
        return e164
    if parsed.country_code == phonenumbers.country_code_for_region(DEFAULT_REGION):
        return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.NATIONAL)
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.INTERNATIONAL)


def search_digits(term):
    """The digits of `term` as they appear in a stored E.164 number (`030 901820` →
    `4930901820`, `0049 30…` → `4930…`, `+49 30…` → `4930…`), or "" if `term` does not
    look like (part of) a phone number."""
    if not term or set(term) - set("0123456789+-/() ") or not any(ch.isdigit() for ch in term):
        return ""
    digits = "".join(ch for ch in term if ch.isdigit())
    if digits.startswith("00"):
        return digits[2:]  # international prefix
    if digits.startswith("0"):
        return "49" + digits[1:]  # a German national number
    return digits


# Between the digits of a number as people write it: spaces, dots, slashes, parentheses
# and hyphens (`0176 123 45-67`, `(0176) 1234567`, `+49 (0)176/1234567`).
_SEPARATORS = "[ ./()-]*"


def written_pattern(e164):
    """A regular expression that finds the number written in any usual form inside a
    text: E.164, international with `+` or `00`, national with its leading 0, with or
    without separators, or as bare digits; never inside a longer run of digits.

    It is written for both regex dialects of the project's databases (Python's `re`,
    which Django's `__regex` uses on SQLite, and PostgreSQL's advanced expressions), so
    `Model.objects.filter(text__regex=written_pattern(e164))` finds the same rows on
    both. An invalid `e164` raises InvalidPhoneNumber."""
    try:
        parsed = phonenumbers.parse(e164, None)
    except phonenumbers.NumberParseException:
        raise InvalidPhoneNumber(f"'{e164}' is not an E.164 number.") from None
    national_number = phonenumbers.national_significant_number(parsed)
    sep = _SEPARATORS
    prefix = (f"(?:(?:[+]|00)?{sep}{parsed.country_code}{sep}(?:[(]0[)]{sep})?|0{sep})?")
    return f"(?:^|[^0-9]){prefix}{sep.join(national_number)}(?:[^0-9]|$)"


# A run of digits long enough to be a phone number that libphonenumber did not take for
# a valid one (a typo, a foreign format): still hidden, all but its last two digits.
_DIGIT_RUN = re.compile(r"[+]?[0-9](?:[ /-]?[0-9]){6,}")
_URL = re.compile(r"(https?://[^/\s?#]+)\S*")
# Dates and times as the project writes them (ISO, German), left as they are: digits
# with dots and hyphens that libphonenumber would read as a number.
_MOMENT = re.compile(r"(\b[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2})?)?"
                     r"|\b[0-9]{1,2}[.][0-9]{1,2}[.][0-9]{2,4}(?: [0-9]{1,2}:[0-9]{2})?)")


def masked_text(text, *, region=DEFAULT_REGION):
    """`text` with every phone number in it masked as `mask` does (`+49171•••••67`),
    other long runs of digits hidden but for their last two, and every URL cut to its
    origin (`https://acme.example/…`): what a log line may show of free text, such as
    a mail that the console backend prints. Dates and times stay readable."""
    if not text:
        return text
    text = _URL.sub(lambda m: m.group(1) + ("/…" if len(m.group(0)) > len(m.group(1)) else ""), text)
    parts = _MOMENT.split(text)  # odd indexes: the dates and times
    return "".join(part if index % 2 else _masked_numbers(part, region) for index, part in enumerate(parts))


def _masked_numbers(text, region):
    pieces, last = [], 0
    for match in phonenumbers.PhoneNumberMatcher(text, region):
        number = phonenumbers.format_number(match.number, phonenumbers.PhoneNumberFormat.E164)
        pieces += [text[last:match.start], mask(number)]
        last = match.end
    text = "".join([*pieces, text[last:]])
    return _DIGIT_RUN.sub(lambda m: re.sub("[0-9]", MASK, m.group(0)[:-2]) + m.group(0)[-2:], text)
