"""German text as it is spoken: numbers, times, dates, prices and abbreviations in words.

A synthesiser reads "0221 487693" as two large numbers and "Str." as a word; a caller
expects digit groups and "Straße". `spoken_form` rewrites a German text into what the
voice should say, before any German synthesis (render, `/api/voice/speak`,
`/v1/speak`, the agent) and in a script's analysis (`spoken`), so that an operator
reads it before anyone hears it.

Plain Python (no Django; number words from `num2words`), one pass per rule over the
text; parts that are spoken as they are — `{{variables}}`, links and e-mail
addresses — are left untouched. The order of the rules matters: the most specific
forms (phone numbers, dates, times, prices) go before plain numbers, and whatever
digit is left at the end is read as a number, so the result never holds a digit.
"""
import re
from functools import lru_cache

from num2words import num2words

from console.sentences import ABBREVIATION, ABBREVIATION_WORDS

# Bumped whenever the same text can come out differently: part of the synthesis
# cache key (speech_app.tts), so that renders made with an older rule are not reused.
VERSION = "spoken-1"

DIGIT_WORDS = ("null", "eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun")
MONTHS = ("Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober",
          "November", "Dezember")
MONTH_ABBREVIATIONS = {"jan": 1, "feb": 2, "mär": 3, "mrz": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
                       "sept": 9, "okt": 10, "nov": 11, "dez": 12}
WEEKDAYS = {"mo": "Montag", "di": "Dienstag", "mi": "Mittwoch", "do": "Donnerstag", "fr": "Freitag",
            "sa": "Samstag", "so": "Sonntag"}

# Spoken as they are: variables, links, e-mail addresses and domain names (as the
# linter reads them, scripts_app.analysis.text).
_KEEP = re.compile(
    r"\{\{\s*[A-Za-z0-9_.]+\s*\}\}"
    r"|(?:https?://|www\.)\S+"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
    r"|\b[\w-]+(?:\.[\w-]+)*\.(?:de|com|net|org|eu|info|io|at|ch|biz|shop|online)\b(?:/\S*)?",
    re.IGNORECASE,
)

# The abbreviations and their spoken forms are the German sentence splitter's too
# (console.sentences: a period after one ends no sentence), declared once there.
_ABBREVIATION = ABBREVIATION
_ABBREVIATION_WORDS = ABBREVIATION_WORDS


_DAY = r"(?:Mo|Di|Mi|Do|Fr|Sa|So)"
_DASH = r"\s*(?:[–—-]|bis)\s*"
_WEEKDAY_RANGE = re.compile(rf"\b({_DAY})\.?{_DASH}({_DAY})\b\.?")
_WEEKDAY_LIST = re.compile(rf"\b({_DAY})\.?(?=\s*(?:,|/|\+|und)\s*{_DAY}\b)")
_WEEKDAY_LIST_END = re.compile(rf"(?<=[,/+]\s)({_DAY})\b\.?|(?<=[,/+])({_DAY})\b\.?")
# The last day of a list: "Montag, Mittwoch und Fr"; "Samstag/Sonntag" is said with "und".
_WEEKDAY_AFTER_DAY = re.compile(rf"((?:tag|woch),?\s+(?:und|oder|bis|sowie)\s+)({_DAY})\b\.?")
_WEEKDAY_SLASH = re.compile(r"(?:(?<=tag)|(?<=woch))\s*[/+]\s*(?=[MDFS])")
# A weekday before a date or a time ("Mo, 03.12.", "Fr. 14 Uhr") or alone with its dot.
_WEEKDAY_BEFORE = re.compile(rf"\b({_DAY})(?:\.,?|,)?(?=\s*\d)|\b({_DAY})\.(?=\s|$)")

# A phone number: a leading 0 or +country code, digits in groups (space, slash,
# hyphen, dot, parentheses), at least six digits in all.
_PHONE = re.compile(
    r"(?<![\w,.+])(?:\+|00)\d{1,3}(?:\s?\(0\))?(?:[ /-]*\(?\d+\)?){2,}"
    r"|(?<![\w,.+])\(?0\d{1,5}\)?(?:[ /-]*\d+){1,}(?![\w,.]\d)"
)
_POSTCODE = re.compile(r"(?<![\w.,])(\d{5})(?=\s+[A-ZÄÖÜ][a-zäöüß])")

_PREPOSITIONS_DATIVE = {"am", "vom", "zum", "beim", "im", "dem", "ab", "bis", "seit", "vor", "nach", "den"}
_ARTICLES = {"der", "die", "das"}
_BARE_DATIVE = {"an", "in", "auf", "mit", "zu", "bei", "aus", "von"}
_DATE = re.compile(r"(?<![\d.,])(\d{1,2})\.\s?(\d{1,2})\.(?:\s?(\d{4}|\d{2})(?!\d|,\d))?(?![\d])")
_MONTH_NAMES = "|".join(MONTHS + ("Jan", "Feb", "Mär", "Mrz", "Apr", "Jun", "Jul", "Aug", "Sept", "Sep", "Okt",
                                  "Nov", "Dez"))
_DAY_MONTH = re.compile(rf"(?<![\d.,])(\d{{1,2}})\.\s*({_MONTH_NAMES})\b\.?(?:\s+(\d{{4}})\b)?")
_TIME = re.compile(r"(?<![\d.,:])([01]?\d|2[0-3]):([0-5]\d)(?:\s*(Uhr|h)\b)?(?![\d])"
                   r"|(?<![\d.,:])([01]?\d|2[0-3])\.([0-5]\d)(?=\s*Uhr\b)\s*(Uhr)")
# "8 h" is a time after "um", "ab", "bis", "gegen", otherwise hours (a unit).
_HOUR = re.compile(r"(?<![\d.,:])([01]?\d|2[0-4])\s*Uhr\b"
                   r"|(?:(?<=\bum )|(?<=\bab )|(?<=\bbis )|(?<=\bgegen ))([01]?\d|2[0-4])\s?h\b")
_RANGE = re.compile(r"(?<=\d)\s*[–—]\s*(?=\d)|(?<=\d)-(?=\d{1,2}(?::\d\d)?\s*(?:Uhr|h\b|€|Euro|%|Prozent))"
                    r"|(?<=\d)\s+-\s+(?=\d)|(?<=Uhr)\s*[–—-]\s*(?=\d)")
_AMOUNT = r"(\d{1,3}(?:\.\d{3})+|\d+)(?:,(\d{1,2}|-{1,2}|–))?"
_CURRENCY_AFTER = re.compile(rf"(?<![\d.,]){_AMOUNT}\s*(€|EUR\b|Euro\b|Cent\b|ct\b|\$|USD\b|CHF\b)")
_CURRENCY_BEFORE = re.compile(rf"(€|EUR|CHF|\$)\s?{_AMOUNT}(?![\d])")
_PERCENT = re.compile(r"(?<![\d.,])(\d+(?:,\d+)?)\s*(%|Prozent\b|‰)")
_UNITS = {"km": "Kilometer", "kg": "Kilogramm", "g": "Gramm", "m²": "Quadratmeter", "qm": "Quadratmeter",
          "m": "Meter", "cm": "Zentimeter", "mm": "Millimeter", "l": "Liter", "ml": "Milliliter",
          "°C": "Grad Celsius", "°": "Grad", "km/h": "Kilometer pro Stunde", "min": "Minuten", "h": "Stunden",
          "kWh": "Kilowattstunden", "MB": "Megabyte", "GB": "Gigabyte"}
_UNIT = re.compile(r"(?<![\d.,])(\d+(?:,\d+)?)\s?(km/h|kWh|km|kg|m²|qm|cm|mm|ml|°C|°|MB|GB|min|m|g|l|h)(?![\wäöüß²])")
# "3. Stock", "im 2. Quartal"; not a number that ends a sentence ("Es sind 3. Bitte …").
_ORDINAL = re.compile(r"(?<![\d.,:])(\d{1,3})\.(?=\s+(?:[a-zäöüß]|(?!(?:Bitte|Wir|Sie|Ich|Danach|Dann|Das|Die|Der|"
                      r"Es|Er|Vielen|Danke|Und|Aber|Ihr|Ihre|Unser|Unsere|Bei|Wenn|Auf|In|Im|Am|Für)\b)[A-ZÄÖÜ]))")
_STREET = re.compile(r"(?<=[a-zäöüß])str\.")
_HOUSE_NUMBER = re.compile(r"(?<![\d.,])(\d{1,4})([a-h])\b")
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:\.\d{3})+(?![\d]|,\d)")
_DECIMAL = re.compile(r"(?<![\d.,])(\d+),(\d+)(?![\d])")
_NUMBER = re.compile(r"\d+")
# Police, emergency and authorities' numbers are said digit by digit.
_SERVICE_NUMBERS = {"110", "112", "115"}
_FEMININE = re.compile(r"(?:e|ung|heit|keit|schaft|ion|tät|ik|ur|nacht|frau|woche|stunde|minute|sekunde|person|"
                       r"tür|uhr)$", re.IGNORECASE)
_SYMBOLS = (("24/7", "rund um die Uhr"), ("&", " und "), ("§§", "Paragrafen "), ("§", "Paragraf "), ("½", " einhalb"), ("±", " plus minus "))


def spoken_form(text):
    """`text` with every number, time, date, price and abbreviation as German words."""
    if not text:
        return text
    parts, last = [], 0
    for match in _KEEP.finditer(text):
        parts.append(_spoken(text[last:match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(_spoken(text[last:]))
    return "".join(parts)


def _spoken(text):
    if not text.strip():
        return text
    for symbol, spoken in _SYMBOLS:
        text = text.replace(symbol, spoken)
    text = _WEEKDAY_RANGE.sub(lambda m: f"{_weekday(m.group(1))} bis {_weekday(m.group(2))}", text)
    text = _WEEKDAY_LIST.sub(lambda m: _weekday(m.group(1)), text)
    text = _WEEKDAY_LIST_END.sub(lambda m: _weekday(next(g for g in m.groups() if g)), text)
    text = _WEEKDAY_AFTER_DAY.sub(lambda m: m.group(1) + _weekday(m.group(2)), text)
    text = _WEEKDAY_SLASH.sub(" und ", text)
    text = _WEEKDAY_BEFORE.sub(
        lambda m: _after_period(m, _weekday(m.group(1) or m.group(2)) + ("," if m.group(1) else "")), text)
    text = _STREET.sub("straße", text)
    text = _ABBREVIATION.sub(_abbreviation, text)
    text = _PHONE.sub(_phone, text)
    text = _POSTCODE.sub(lambda m: _digits(m.group(1)), text)
    text = _RANGE.sub(" bis ", text)
    text = _DATE.sub(_date, text)
    text = _DAY_MONTH.sub(_day_month, text)
    text = _TIME.sub(_time, text)
    text = _HOUR.sub(lambda m: f"{_hour(int(next(g for g in m.groups() if g)))} Uhr", text)
    text = _CURRENCY_AFTER.sub(lambda m: _money(m.group(1), m.group(2), m.group(3)), text)
    text = _CURRENCY_BEFORE.sub(lambda m: _money(m.group(2), m.group(3), m.group(1)), text)
    text = _PERCENT.sub(_percent, text)
    text = _UNIT.sub(lambda m: f"{_decimal(m.group(1))} {_UNITS[m.group(2)]}", text)
    text = _ORDINAL.sub(_ordinal, text)
    text = _HOUSE_NUMBER.sub(lambda m: f"{_cardinal(int(m.group(1)))} {m.group(2)}", text)
    text = _GROUPED.sub(lambda m: _cardinal(int(m.group(0).replace(".", ""))), text)
    text = _DECIMAL.sub(lambda m: _decimal(m.group(0)), text)
    text = _NUMBER.sub(_number, text)
    return re.sub(r"[ \t]{2,}", " ", text)


def _weekday(abbreviation):
    return WEEKDAYS[abbreviation.lower()]


def _abbreviation(match):
    written = re.sub(r"\s", "", match.group(0))
    spoken = _ABBREVIATION_WORDS.get(written) or _ABBREVIATION_WORDS.get(written[0].swapcase() + written[1:])
    if spoken is None:
        return match.group(0)
    if written[0].isupper() and spoken[0].islower():
        spoken = spoken[0].upper() + spoken[1:]
    return _after_period(match, spoken)


def _digits(digits):
    return " ".join(DIGIT_WORDS[int(d)] for d in digits)


def _digit_groups(groups):
    """Digit groups read digit by digit, a pause (comma) between groups; a long group
    in threes, as a caller writes a number down."""
    spoken = []
    for group in groups:
        spoken += [_digits(chunk) for chunk in _chunks(group)]
    return ", ".join(spoken)


def _chunks(digits):
    """Up to five digits stay one group; longer runs in threes, the end in fours where
    a three would leave one or two digits over (7 → 3+4, 8 → 4+4, 10 → 3+3+4)."""
    if len(digits) <= 5:
        return [digits]
    rest = len(digits) % 3
    tail = {0: 0, 1: 4, 2: 8}[rest]
    head = digits[:len(digits) - tail]
    chunks = [head[i:i + 3] for i in range(0, len(head), 3)]
    if tail:
        chunks += [digits[len(head):][i:i + 4] for i in range(0, tail, 4)]
    return chunks


def _phone(match):
    number = match.group(0)
    digits = re.sub(r"\D", "", number.replace("(0)", ""))
    if len(digits) < 6:
        return number
    groups = [g for g in re.split(r"[\s/.()-]+", number.replace("(0)", "")) if g]
    prefix = ""
    if groups[0].startswith("+"):
        prefix = "plus "
        groups[0] = groups[0][1:]
    if not groups[0]:
        groups = groups[1:]
    return prefix + _digit_groups([re.sub(r"\D", "", g) for g in groups if re.sub(r"\D", "", g)])


def _case_before(text, start):
    """The ordinal's ending from the word before it: dative after a preposition,
    weak after an article, strong (nominative) otherwise; the second of "am 1. und 2."
    takes the first's ending."""
    before = text[:start].split()
    word = before[-1].lower().strip(",") if before else ""
    if word in ("und", "oder", "sowie") and len(before) > 1 and re.fullmatch(r"\d{1,3}\.", before[-2]):
        return _case_before(text, text.rfind(before[-2], 0, start))
    if word in _PREPOSITIONS_DATIVE:
        return "n"
    if word in _ARTICLES:
        return ""
    return "r"


def _after_period(match, spoken):
    """`spoken` with the sentence's full stop kept: a date or abbreviation whose own
    dot also ends the text or its line ("bis zum 31.03.", "… inkl. MwSt.")."""
    if match.group(0).endswith(".") and re.match(r"[ \t]*(?:$|\n)", match.string[match.end():]):
        return spoken + "."
    return spoken


def _ordinal_word(n, ending):
    return num2words(n, lang="de", to="ordinal") + ending


def _year(year):
    year = int(year)
    if year < 100:
        year += 2000
    return num2words(year, lang="de", to="year") if 1100 <= year <= 1999 else _cardinal(year)


def _date(match):
    day, month = int(match.group(1)), int(match.group(2))
    if not (1 <= day <= 31 and 1 <= month <= 12):
        return match.group(0)
    spoken = f"{_ordinal_word(day, _case_before(match.string, match.start()))} {MONTHS[month - 1]}"
    if match.group(3):
        spoken += f" {_year(match.group(3))}"
    return _after_period(match, spoken)


def _day_month(match):
    day = int(match.group(1))
    name = match.group(2)
    month = MONTHS.index(name) + 1 if name in MONTHS else MONTH_ABBREVIATIONS.get(name.lower().rstrip("."))
    if not (1 <= day <= 31) or not month:
        return match.group(0)
    spoken = f"{_ordinal_word(day, _case_before(match.string, match.start()))} {MONTHS[month - 1]}"
    if match.group(3):
        spoken += f" {_year(match.group(3))}"
    return _after_period(match, spoken)


def _hour(hour):
    return "ein" if hour == 1 else _cardinal(hour)


def _time(match):
    if match.group(1) is not None:
        hour, minute = int(match.group(1)), int(match.group(2))
    else:
        hour, minute = int(match.group(4)), int(match.group(5))
    spoken = f"{_hour(hour)} Uhr"
    if minute:
        spoken += f" {_cardinal(minute)}"
    return spoken


_CURRENCY_WORDS = {"€": "Euro", "EUR": "Euro", "Euro": "Euro", "$": "Dollar", "USD": "Dollar", "CHF": "Franken"}
_SUBUNITS = {"Euro": "Cent", "Dollar": "Cent", "Franken": "Rappen"}


def _money(whole, cents, currency):
    amount = int(whole.replace(".", ""))
    if currency in ("Cent", "ct"):
        return f"{_cardinal(amount)} Cent"
    name = _CURRENCY_WORDS[currency]
    cents = int(cents.ljust(2, "0")) if cents and cents.isdigit() else 0
    if amount == 0 and cents:
        return f"{_cardinal(cents)} {_SUBUNITS[name]}"
    spoken = f"{'ein' if amount == 1 else _cardinal(amount)} {name}"
    if cents:
        spoken += f" {_cardinal(cents)}"
    return spoken


def _percent(match):
    word = "Promille" if match.group(2) == "‰" else "Prozent"
    return f"{_decimal(match.group(1))} {word}"


def _decimal(number):
    whole, _, fraction = number.partition(",")
    spoken = _cardinal(int(whole))
    if fraction:
        spoken += " Komma " + _digits(fraction)
    return spoken


def _ordinal(match):
    """"im 3. Stock" (dative with article), "der 10. Anruf", "an 2. Stelle" (a bare
    preposition: the noun's gender decides)."""
    before = match.string[:match.start()].split()
    if before and before[-1].lower() in _BARE_DATIVE:
        noun = re.match(r"\s+(\w+)", match.string[match.end():])
        ending = "r" if noun and _FEMININE.search(noun.group(1)) else "m"
    else:
        ending = _case_before(match.string, match.start())
    return _ordinal_word(int(match.group(1)), ending)


def _number(match):
    digits = match.group(0)
    if len(digits) > 4 or (len(digits) > 1 and digits.startswith("0")) or digits in _SERVICE_NUMBERS:
        return _digit_groups([digits])
    value = int(digits)
    rest = match.string[match.end():]
    if value == 1:
        following = re.match(r"\s+([A-Za-zÄÖÜäöüß]+)", rest)
        if following and following.group(1)[0].isupper():
            feminine = _FEMININE.search(following.group(1))
            before = match.string[:match.start()].split()
            if before and before[-1].lower() in _BARE_DATIVE | {"nach", "seit", "vor"}:
                return "einer" if feminine else "einem"
            return "eine" if feminine else "ein"
        return "eins"
    if 1100 <= value <= 1999 and not re.match(r"\s*(?:€|Euro|EUR|Stück|Kunden|Mal)", rest):
        return _year(value)
    return _cardinal(value)


@lru_cache(maxsize=4096)
def _cardinal(value):
    return num2words(value, lang="de")
