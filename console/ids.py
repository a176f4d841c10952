"""Public identifiers: a type prefix and a ULID-like token (`as_01jd…`).

Time-ordered (so indexes stay compact and ids sort by creation) and 80 random bits,
so ids are not a guessable counter (CONTRACT §2).
"""
import secrets
import time

from django.utils.deconstruct import deconstructible

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


def _base32(number, length):
    chars = []
    for _ in range(length):
        number, rest = divmod(number, 32)
        chars.append(_CROCKFORD[rest])
    return "".join(reversed(chars))


def new_ulid():
    milliseconds = time.time_ns() // 1_000_000
    return _base32(milliseconds, 10) + _base32(secrets.randbits(80), 16)


@deconstructible
class PrefixedId:
    """A field default that makes `<prefix>_<ulid>`; serialisable for migrations."""

    def __init__(self, prefix):
        self.prefix = prefix

    def __call__(self):
        return f"{self.prefix}_{new_ulid()}"

    def __eq__(self, other):
        return isinstance(other, PrefixedId) and other.prefix == self.prefix


# Long enough for prefix + "_" + 26 characters.
ID_LENGTH = 40
