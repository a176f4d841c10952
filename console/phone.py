"""Phone numbers in E.164, parsed with libphonenumber (the `phonenumbers` package)."""
import phonenumbers

DEFAULT_REGION = "DE"


class InvalidPhoneNumber(ValueError):
    pass


def to_e164(raw, *, region=DEFAULT_REGION):
    """`raw` in international or (German) national format as E.164, or InvalidPhoneNumber.

    National numbers such as `030 1234567` or `0171 2345678` are read as numbers of
    `region`; anything with a leading `+` or `00` is read as international.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidPhoneNumber("Enter a phone number.")
    text = raw.strip()
    if any(ch.isalpha() for ch in text):
        raise InvalidPhoneNumber("A phone number contains no letters.")
    try:
        parsed = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        raise InvalidPhoneNumber(f"'{raw}' is not a phone number.") from None
    if not phonenumbers.is_valid_number(parsed):
        raise InvalidPhoneNumber(
            f"'{raw}' is not a valid phone number; use the international format, e.g. +49 30 1234567."
        )
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
