"""A caller's name as a German receptionist compares it: by its sound. The Kölner
Phonetik (Hans Joachim Postel, 1969) gives "Meier", "Meyer" and "Maier" one code, as it
gives the spellings a phone line's recognition makes of one name ("Breman", "Prima");
the caller's number stays the key, the name only tells apart who shares it."""
import unicodedata

_VOWELS = frozenset("AEIJOUY")
_CODES = {"B": "1", **dict.fromkeys("FVW", "3"), **dict.fromkeys("GKQ", "4"), "L": "5", **dict.fromkeys("MN", "6"),
          "R": "7", **dict.fromkeys("SZ", "8")}
_C_HARD_AT_START = frozenset("AHKLOQRUX")
_C_HARD = frozenset("AHKOQUX")


def _letters(word: str) -> str:
    # An umlaut is a vowel that, unlike A, O and U, does not make a C before it hard.
    word = word.upper().replace("ß", "SS").replace("Ä", "E").replace("Ö", "E").replace("Ü", "E")
    plain = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in plain if "A" <= ch <= "Z")


def _code(letters: str, at: int) -> str:
    letter = letters[at]
    before = letters[at - 1] if at else ""
    after = letters[at + 1] if at + 1 < len(letters) else ""
    if letter in _VOWELS:
        return "0"
    if letter == "H":
        return ""
    if letter == "P":
        return "3" if after == "H" else "1"
    if letter in "DT":
        return "8" if after in ("C", "S", "Z") else "2"
    if letter == "X":
        return "8" if before in ("C", "K", "Q") else "48"
    if letter == "C":
        if at == 0:
            return "4" if after in _C_HARD_AT_START else "8"
        return "4" if after in _C_HARD and before not in ("S", "Z") else "8"
    return _CODES[letter]


def cologne(word: str) -> str:
    """The word's Kölner Phonetik code ("" for a word without letters)."""
    letters = _letters(word)
    codes = "".join(_code(letters, at) for at in range(len(letters)))
    collapsed = [digit for at, digit in enumerate(codes) if not at or digit != codes[at - 1]]
    return "".join(digit for at, digit in enumerate(collapsed) if digit != "0" or not at)


def name_matches(stored: str, given: str) -> bool:
    """The name given matches the booked one: every word given is one of the booked
    name's words, as spelled or by its sound — the whole name or the surname alone
    ("Lehmann" or "Leman" for "Anna Lehmann")."""
    stored_words = [(word, cologne(word)) for word in stored.casefold().split()]
    given_words = given.casefold().split()
    return bool(given_words) and all(
        any(word == kept or (code and cologne(word) == code) for kept, code in stored_words) for word in given_words)
