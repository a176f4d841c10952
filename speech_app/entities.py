"""Numbers heard: phone numbers, dates, times, amounts and reference numbers in what a
German caller said (Whisper's text: digits or number words).

`entities(text, now=…)` returns a list of mappings, in text order:

- `{"type": "phone", "text", "value": "+49221487693"}` (E.164; national and
  international forms, digit by digit, in pairs or groups, "doppel-null");
- `{"type": "date", "text", "value": "2026-12-03"}` ("morgen", "nächsten Dienstag",
  "am dritten Dezember", "3.12.");
- `{"type": "time", "text", "value": "14:30"}` ("um 14 Uhr 30", "halb drei",
  "viertel nach neun"); a time of a business day: "um drei" is 15:00;
- `{"type": "datetime", "text", "value": "2026-11-26T14:30:00+01:00"}` when a date
  and a time are said together ("morgen um halb drei"), on the tenant's clock;
- `{"type": "amount", "text", "value": "12.50", "currency": "EUR"}`;
- `{"type": "reference", "kind": "customer"|"order"|"invoice"|"contract"|"case"|
  "number", "text", "value": "4711"}` (digits after "Kundennummer", "Bestellnummer" …).

Plain Python apart from `phonenumbers`; relative dates resolve against `now` (an
aware datetime in the tenant's time zone).
"""
import re
from datetime import date, datetime, timedelta

import phonenumbers

__all__ = ["entities", "number_of"]

_UNITS = {"null": 0, "ein": 1, "eins": 1, "eine": 1, "einen": 1, "zwei": 2, "zwo": 2, "drei": 3, "vier": 4,
          "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11, "zwölf": 12,
          "sechzehn": 16, "siebzehn": 17}
_TENS = {"zwanzig": 20, "dreißig": 30, "dreissig": 30, "vierzig": 40, "fünfzig": 50, "sechzig": 60, "siebzig": 70,
         "achtzig": 80, "neunzig": 90}
_ORDINAL_STEMS = {"erst": 1, "zweit": 2, "dritt": 3, "viert": 4, "fünft": 5, "sechst": 6, "siebt": 7, "siebent": 7,
                  "acht": 8, "neunt": 9, "zehnt": 10, "elft": 11, "zwölft": 12}
MONTHS = {"januar": 1, "jänner": 1, "februar": 2, "märz": 3, "april": 4, "mai": 5, "juni": 6, "juli": 7,
          "august": 8, "september": 9, "oktober": 10, "november": 11, "dezember": 12}
WEEKDAYS = {"montag": 0, "dienstag": 1, "mittwoch": 2, "donnerstag": 3, "freitag": 4, "samstag": 5,
            "sonnabend": 5, "sonntag": 6}
_REFERENCE_KINDS = {"kunden": "customer", "bestell": "order", "auftrags": "order", "rechnungs": "invoice",
                    "vertrags": "contract", "vorgangs": "case", "akten": "case", "ticket": "case",
                    "mitglieds": "customer", "versicherungs": "contract", "kundennr": "customer"}


def number_of(word):
    """The value of a German number word ("dreiundzwanzig", "zweitausendsechsundzwanzig",
    "vierzehn"), or None."""
    word = word.lower().replace("-", "")
    if not word:
        return None
    if word in _UNITS:
        return _UNITS[word]
    if word in _TENS:
        return _TENS[word]
    for big, factor in (("tausend", 1000), ("hundert", 100)):
        if big in word:
            head, _, tail = word.partition(big)
            left = 1 if head in ("", "ein") else number_of(head)
            right = 0 if tail == "" else number_of(tail.removeprefix("und"))
            if left is None or right is None or (factor == 100 and left > 99):
                return None
            return left * factor + right
    if word.endswith("zehn"):
        head = word[:-4]
        unit = {"drei": 3, "vier": 4, "fünf": 5, "acht": 8, "neun": 9, "sech": 6, "sieb": 7}.get(head)
        return 10 + unit if unit else None
    if "und" in word:
        unit, _, tens = word.partition("und")
        if unit in ("ein", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun") and tens in _TENS:
            return _UNITS[unit] + _TENS[tens]
    return None


def ordinal_of(word):
    """The value of a German ordinal word ("dritten", "einundzwanzigster"), or None."""
    word = word.lower().replace("-", "")
    stem = re.sub(r"(?:e|en|er|es|em)$", "", word)
    if stem in _ORDINAL_STEMS:
        return _ORDINAL_STEMS[stem]
    for suffix in ("st", "t"):
        if stem.endswith(suffix):
            value = number_of(stem[: -len(suffix)])
            if value is not None and (suffix == "st") == (value >= 20):
                return value
    return None


# Words to digits ------------------------------------------------------------------
# A date ("3.12.", "03.12.2026"), an ordinal before a word ("3. Dezember"), a number
# (with its separators: "12,50", "14:30", "1.250"), a word, or a sign.
_TOKEN = re.compile(r"\+|\d{1,2}\.\d{1,2}\.(?:\d{4}|\d{2})?|\d{1,2}\.(?=\s+[^\W\d_])|\d+(?:[.,:]\d+)*"
                    r"|[^\W\d_]+(?:-[^\W\d_]+)*|[^\s\w]")
_DOUBLE = re.compile(r"\b(?:doppel|doppelte?)[\s-]?(null|eins|zwei|zwo|drei|vier|fünf|sechs|sieben|acht|neun|\d)\b",
                     re.IGNORECASE)
_TRIPLE = re.compile(r"\b(?:dreifach|tripel)[\s-]?(null|eins|zwei|zwo|drei|vier|fünf|sechs|sieben|acht|neun|\d)\b",
                     re.IGNORECASE)


class Token:
    __slots__ = ("text", "start", "end", "value", "kind")

    def __init__(self, text, start, end):
        self.text, self.start, self.end = text, start, end
        self.kind, self.value = _classify(text)


def _classify(text):
    """("digits", "0221"), ("decimal", "12,50"), ("time", "14:30"), ("ordinal", 3),
    ("word", "morgen") or ("punct", ",")."""
    low = text.lower()
    if re.fullmatch(r"\d+", text):
        return "digits", text
    if re.fullmatch(r"\d{1,2}\.", text):
        return "ordinal", int(text[:-1])
    if re.fullmatch(r"\d{1,2}[:.]\d{2}", text):
        return "clock", text.replace(".", ":")
    if re.fullmatch(r"\d{1,2}\.\d{1,2}\.(?:\d{2,4})?", text):
        return "datedigits", text
    if re.fullmatch(r"\d+(?:\.\d{3})*,\d+|\d+,\d+", text):
        return "decimal", text
    if re.fullmatch(r"\d+(?:[.,:]\d+)+\.?", text):
        return "digits", re.sub(r"\D", "", text)
    if text == "+":
        return "plus", text
    if re.fullmatch(r"[^\W\d_]+(?:-[^\W\d_]+)*", text):
        parts = low.split("-")
        if len(parts) > 1 and number_of(low) is None and all(number_of(part) is not None for part in parts):
            return "digits", "".join(str(number_of(part)) for part in parts)  # "null-eins-sieben-sechs"
        value = number_of(low)
        if value is not None and low not in ("ein", "eine", "einen"):
            return "number", value
        ordinal = ordinal_of(low)
        if ordinal is not None and low not in ("acht",):
            return "ordinalword", ordinal
        return "word", low
    return "punct", text


def _tokens(text):
    text = _TRIPLE.sub(lambda m: " ".join([m.group(1)] * 3), text)
    text = _DOUBLE.sub(lambda m: f"{m.group(1)} {m.group(1)}", text)
    return text, [Token(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


# The entity finders --------------------------------------------------------------
def entities(text, *, now=None):
    """The entities in `text` (see the module's docstring), in text order."""
    text, tokens = _tokens(text or "")
    now = now or datetime.now().astimezone()
    found = []
    used = set()
    for finder in (_phones, _references, _amounts, _dates_and_times):
        for start, end, entity in finder(tokens, text, now, used):
            used.update(range(start, end))
            entity["text"] = text[tokens[start].start:tokens[end - 1].end]
            found.append((tokens[start].start, entity))
    found.sort(key=lambda pair: pair[0])
    return [entity for _, entity in found]


def _digit_run(tokens, i, used):
    """The end index and the digits of a run of digit tokens and single number words
    (0–9, or pairs like "zweiundzwanzig") from i, joined across spaces, commas,
    hyphens and slashes."""
    digits, j, end = "", i, i
    while j < len(tokens) and j not in used:
        token = tokens[j]
        if token.kind == "digits":
            digits += token.value
        elif token.kind == "number" and token.value < 1000:
            digits += str(token.value)
        elif token.kind == "punct" and token.text in ",-/()" and digits:
            j += 1
            continue
        else:
            break
        j += 1
        end = j
    return end, digits


def _phones(tokens, text, now, used):
    i = 0
    while i < len(tokens):
        token = tokens[i]
        international = token.kind == "plus" or token.text.lower() == "plus"
        start = i
        if international:
            i += 1
        elif token.kind == "digits" and token.value.startswith("49") and _after_number_word(tokens, i):
            international = True  # "Meine Nummer ist 49 221 …": the plus was not heard
        elif not (token.kind == "digits" and token.value.startswith("0")
                  or token.kind == "number" and token.value == 0):
            i += 1
            continue
        end, digits = _digit_run(tokens, i, used)
        if international:
            digits = "+" + digits
        elif digits.startswith("00"):
            digits = "+" + digits[2:]
        national = digits.lstrip("+")
        if 6 <= len(national) <= 15:
            try:
                number = phonenumbers.parse(digits, "DE")
            except phonenumbers.NumberParseException:
                number = None
            if number is not None and phonenumbers.is_possible_number(number):
                yield start, end, {"type": "phone", "value": phonenumbers.format_number(
                    number, phonenumbers.PhoneNumberFormat.E164)}
                i = end
                continue
        i = max(end, start + 1)


_PHONE_WORDS = re.compile(r"(?:telefon|handy|mobil|ruf|festnetz|fax)?nummer|telefon|handy|mobil|erreichbar|unter")


def _after_number_word(tokens, i):
    """Whether one of the three words before token i names a phone number."""
    return any(_word(tokens, k) and _PHONE_WORDS.fullmatch(_word(tokens, k)) for k in range(max(0, i - 3), i))


def _references(tokens, text, now, used):
    for i, token in enumerate(tokens):
        if token.kind != "word" or i in used:
            continue
        kind = _reference_kind(token.value)
        if kind is None:
            continue
        j = i + 1
        while j < len(tokens) and tokens[j].kind == "word" and tokens[j].value in ("ist", "lautet", "lautete",
                                                                                      "lauten", "nummer", "die", "ja"):
            j += 1
        while j < len(tokens) and tokens[j].kind == "punct" and tokens[j].text in ":,":
            j += 1
        prefix = ""
        if j + 1 < len(tokens) and tokens[j].kind == "word" and len(tokens[j].text) == 1:
            prefix = tokens[j].text.upper()  # "R 12345"
        end, digits = _digit_run(tokens, j + bool(prefix), used)
        if digits:
            yield j, end, {"type": "reference", "kind": kind, "value": prefix + digits}


_REFERENCE_NOUNS = {"bestellung": "order", "rechnung": "invoice", "auftrag": "order", "vertrag": "contract",
                    "vorgang": "case", "ticket": "case"}


def _reference_kind(word):
    if word in ("nummer", "nr"):
        return "number"
    if word in _REFERENCE_NOUNS:
        return _REFERENCE_NOUNS[word]
    for stem, kind in _REFERENCE_KINDS.items():
        if word.startswith(stem) and (word.endswith("nummer") or word.endswith("nr") or word.endswith("zeichen")
                                      or word == stem):
            return kind
    return None


_CURRENCY = {"euro": "EUR", "eur": "EUR", "€": "EUR", "cent": "EUR", "dollar": "USD", "franken": "CHF"}


def _amounts(tokens, text, now, used):
    for i, token in enumerate(tokens):
        if i in used or token.kind not in ("digits", "decimal", "number"):
            continue
        j = i + 1
        if j < len(tokens) and tokens[j].text.lower() in _CURRENCY and j not in used:
            currency = tokens[j].text.lower()
            whole, cents = _amount_parts(token)
            if whole is None:
                continue
            end = j + 1
            if currency == "cent":
                whole, cents = 0, whole
            else:
                end += _word(tokens, end) == "und" and _word(tokens, end + 2) == "cent"
            if currency != "cent" and end < len(tokens) and tokens[end].kind in ("digits", "number") \
                    and end not in used:
                # "zwölf Euro fünfzig", "12 Euro 50"
                extra = int(tokens[end].value)
                if extra < 100:
                    cents = extra
                    end += 1
                    if end < len(tokens) and tokens[end].text.lower() == "cent":
                        end += 1
            yield i, end, {"type": "amount", "value": f"{whole}.{cents:02d}", "currency": _CURRENCY[currency]}


def _amount_parts(token):
    if token.kind == "number":
        return token.value, 0
    if token.kind == "digits":
        return int(token.value), 0
    whole, _, fraction = token.text.partition(",")
    return int(whole.replace(".", "")), int(fraction.ljust(2, "0")[:2])


# Dates and times ------------------------------------------------------------------
def _dates_and_times(tokens, text, now, used):
    dates = list(_dates(tokens, now, used))
    taken = set(used)
    for start, end, _ in dates:
        taken.update(range(start, end))
    times = list(_times(tokens, taken))
    merged = []
    for d_start, d_end, day in dates:
        partner = next((t for t in times if 0 <= t[0] - d_end <= 2 or 0 <= d_start - t[1] <= 2), None)
        if partner:
            times.remove(partner)
            hour, minute = partner[2]
            moment = datetime(day.year, day.month, day.day, hour, minute, tzinfo=now.tzinfo)
            if hasattr(now.tzinfo, "localize"):  # pragma: no cover - pytz zones
                moment = now.tzinfo.localize(moment.replace(tzinfo=None))
            merged.append((min(d_start, partner[0]), max(d_end, partner[1]),
                           {"type": "datetime", "value": moment.isoformat()}))
        else:
            merged.append((d_start, d_end, {"type": "date", "value": day.isoformat()}))
    for start, end, (hour, minute) in times:
        merged.append((start, end, {"type": "time", "value": f"{hour:02d}:{minute:02d}"}))
    return merged


def _word(tokens, i):
    return tokens[i].value if 0 <= i < len(tokens) and tokens[i].kind == "word" else None


def _dates(tokens, now, used):
    today = now.date()
    i = 0
    while i < len(tokens):
        if i in used:
            i += 1
            continue
        word = _word(tokens, i)
        found = None
        if word in ("heute", "morgen", "übermorgen") and not (word == "morgen" and _word(tokens, i - 1) in ("guten",)):
            found = (i, i + 1, today + timedelta(days={"heute": 0, "morgen": 1, "übermorgen": 2}[word]))
        elif word in WEEKDAYS:
            start = i - 1 if _word(tokens, i - 1) in ("nächsten", "nächster", "kommenden", "kommender", "am",
                                                      "diesen", "diesem") else i
            ahead = (WEEKDAYS[word] - today.weekday()) % 7
            if ahead == 0 or _word(tokens, i - 1) in ("nächsten", "nächster", "kommenden", "kommender"):
                ahead = ahead or 7
            found = (start, i + 1, today + timedelta(days=ahead))
            # "Dienstag, den 3. Dezember": the explicit date wins, read below.
            k = i + 1 + (i + 1 < len(tokens) and tokens[i + 1].text == ",")
            k += _word(tokens, k) in ("den", "dem")
            explicit = _day_month(tokens, k, today)
            if explicit:
                found = (start, explicit[0], explicit[1])
        elif word == "in" and i + 2 < len(tokens) and tokens[i + 1].kind in ("digits", "number") \
                and _word(tokens, i + 2) in ("tagen", "tag", "wochen", "woche"):
            amount = int(tokens[i + 1].value)
            days = amount * (7 if _word(tokens, i + 2).startswith("woche") else 1)
            found = (i, i + 3, today + timedelta(days=days))
        else:
            explicit = _day_month(tokens, i, today)
            if explicit:
                found = (i, explicit[0], explicit[1])
        if found:
            yield found
            i = found[1]
        else:
            i += 1


def _day_month(tokens, i, today):
    """(end, date) of "3.12.", "3. Dezember", "dritten Dezember", "am 3.12.2026"; None."""
    if i >= len(tokens):
        return None
    token = tokens[i]
    if token.kind == "datedigits":
        parts = [p for p in token.text.split(".") if p]
        day, month = int(parts[0]), int(parts[1])
        year = int(parts[2]) if len(parts) > 2 else None
        end = i + 1
    elif token.kind in ("ordinal", "ordinalword") and _word(tokens, i + 1) in MONTHS:
        day, month, year, end = token.value, MONTHS[_word(tokens, i + 1)], None, i + 2
        if end < len(tokens) and tokens[end].kind == "digits" and len(tokens[end].value) == 4:
            year, end = int(tokens[end].value), end + 1
    elif token.kind in ("digits", "number") and _word(tokens, i + 1) in MONTHS and int(token.value) <= 31:
        day, month, year, end = int(token.value), MONTHS[_word(tokens, i + 1)], None, i + 2
    else:
        return None
    if year is not None and year < 100:
        year += 2000
    try:
        value = date(year or today.year, month, day)
    except ValueError:
        return None
    if year is None and value < today:
        try:
            value = value.replace(year=today.year + 1)
        except ValueError:
            return None
    return end, value


_PARTS_OF_DAY = {"morgens": "am", "früh": "am", "vormittags": "am", "vormittag": "am", "nachts": "am",
                 "nachmittags": "pm", "nachmittag": "pm", "abends": "pm", "abend": "pm", "mittags": "pm"}


def _times(tokens, used):
    i = 0
    while i < len(tokens):
        if i in used:
            i += 1
            continue
        found = _time_at(tokens, i)
        if found:
            end, hour, minute, explicit = found
            start = i - 1 if _word(tokens, i - 1) in ("um", "gegen", "ab", "bis") else i
            part = _word(tokens, end) or _word(tokens, start - 1)
            if not explicit:
                hour = _business_hour(hour, _PARTS_OF_DAY.get(part or ""))
            if part in _PARTS_OF_DAY and _word(tokens, end) == part:
                end += 1
            if 0 <= hour <= 23 and 0 <= minute <= 59:
                yield start, end, (hour, minute)
            i = end
        else:
            i += 1


def _time_at(tokens, i):
    """(end, hour, minute, explicit) of a time starting at token i: "14:30", "14 Uhr 30",
    "vierzehn Uhr dreißig", "halb drei", "viertel nach neun", "um drei"; `explicit`
    when the hour is unambiguous (over 12, or written as a clock)."""
    token, word = tokens[i], _word(tokens, i)

    def hour_at(k):
        if k < len(tokens) and tokens[k].kind in ("digits", "number") and int(tokens[k].value) <= 24:
            return int(tokens[k].value)
        if k < len(tokens) and _word(tokens, k) == "eins":
            return 1
        return None

    if word == "mitternacht":
        return i + 1, 0, 0, True
    if word == "mittag" and _word(tokens, i - 1) in ("um", "gegen", "ab"):
        return i + 1, 12, 0, True
    if token.kind == "clock":
        hour, minute = (int(p) for p in token.value.split(":"))
        end = i + 2 if _word(tokens, i + 1) == "uhr" else i + 1
        return end, hour, minute, True
    if word == "halb" and hour_at(i + 1) is not None:
        return i + 2, (hour_at(i + 1) - 1) % 12 or 12, 30, False
    if word in ("viertel", "dreiviertel") and hour_at(i + 1) is not None:
        minute = 45 if word == "dreiviertel" else 15
        return i + 2, (hour_at(i + 1) - 1) % 12 or 12, minute, False
    if word == "viertel" and _word(tokens, i + 1) in ("nach", "vor") and hour_at(i + 2) is not None:
        hour = hour_at(i + 2)
        if _word(tokens, i + 1) == "nach":
            return i + 3, hour, 15, hour > 12
        return i + 3, (hour - 1) % 24, 45, hour > 12
    hour = hour_at(i)
    if hour is None:
        return None
    if _word(tokens, i + 1) in ("nach", "vor") and hour < 30 and hour_at(i + 2) is not None and token.kind != "ordinal":
        # "zwanzig nach vier", "zehn vor acht"
        target = hour_at(i + 2)
        if _word(tokens, i + 1) == "nach":
            return i + 3, target, hour, target > 12
        return i + 3, (target - 1) % 24, 60 - hour, target > 12
    if _word(tokens, i + 1) in ("und", "bis") and hour_at(i + 2) is not None and _word(tokens, i + 3) == "uhr":
        return i + 1, hour, 0, hour > 12  # "zwischen 14 und 16 Uhr"
    if _word(tokens, i + 1) == "uhr":
        minute, end = 0, i + 2
        if end < len(tokens) and tokens[end].kind in ("digits", "number") and int(tokens[end].value) < 60:
            minute, end = int(tokens[end].value), end + 1
        return end, hour, minute, hour > 12 or hour == 0
    if _word(tokens, i - 1) == "um" and _word(tokens, i + 1) not in MONTHS and token.kind != "ordinal":
        return i + 1, hour, 0, hour > 12
    return None


def _business_hour(hour, part):
    """A time said without morning or afternoon: a business line's hours (7 to 19)
    decide, so "um drei" is 15:00 and "um neun" 9:00; "morgens"/"abends" override."""
    if part == "am":
        return hour % 12
    if part == "pm":
        return hour % 12 + 12 if hour < 12 else hour
    if 1 <= hour <= 6:
        return hour + 12
    return hour
