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
