"""Reading contact rows (JSON objects or the lines of a CSV table) into what a
contact keeps, with a row number and a reason for every row that cannot be taken.

Columns (any case; German names too): `phone` (Telefon, Telefonnummer, Nummer, Mobil,
Handy), `name` (else `Vorname` and `Nachname` — first/last name — make it, and stay
variables), `b2b` (true/false, ja/nein, x), and the consent of `marketing`
campaigns: `consentSource`, `consentAt` (ISO 8601, or 01.10.2026 [10:00] in the
tenant's zone), `consentText`. Every other column is a variable of the contact's
scripts (`{{firstName}}`), named by its header.
"""
import re
from dataclasses import dataclass, field
from datetime import datetime, time
from zoneinfo import ZoneInfo

from campaigns_app.models import MAX_CONTACTS_PER_CAMPAIGN
from console.csv_import import csv_table
from console.errors import ValidationFailed
from console.phone import InvalidPhoneNumber, to_e164

# Rows a CSV may have: the campaign's limit counts contacts, so a file may hold duplicates
# beyond it; the 10 MB cap bounds it too.
MAX_CSV_ROWS = 2 * MAX_CONTACTS_PER_CAMPAIGN

ALIASES = {
    "phone": ("phone", "telefon", "telefonnummer", "nummer", "number", "phonenumber", "phone_number", "mobile",
              "mobil", "handy", "rufnummer", "tel"),
    "name": ("name", "kontakt", "contact"),
    "b2b": ("b2b", "geschaeftskunde", "geschäftskunde", "business"),
    "consentSource": ("consentsource", "consent_source", "einwilligung_quelle", "einwilligungsquelle"),
    "consentAt": ("consentat", "consent_at", "einwilligung_am", "einwilligungsdatum"),
    "consentText": ("consenttext", "consent_text", "einwilligung_text", "einwilligungstext"),
    "variables": ("variables",),
}
_BY_ALIAS = {alias: name for name, aliases in ALIASES.items() for alias in aliases}
# Columns whose values make the name where no `name` column is there (as Excel lists keep them).
FIRST_NAMES = ("vorname", "firstname", "first_name")
LAST_NAMES = ("nachname", "lastname", "last_name", "familienname")
TRUE = {"true", "1", "yes", "ja", "x", "y", "j", "wahr"}
FALSE = {"false", "0", "no", "nein", "", "n", "falsch"}
VARIABLE = re.compile(r"^[A-Za-z0-9_.]{1,64}$")
_GERMAN_DATE = re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})(?:[ ,]+(\d{1,2}):(\d{2})(?::(\d{2}))?)?$")
LIMITS = {"name": 200, "consentSource": 200, "consentText": 5000}
MAX_VARIABLES = 50
MAX_VARIABLE_CHARS = 1000


@dataclass
class ContactRow:
    row: int
    phone: str
    name: str = ""
    b2b: bool = False
    consent_source: str = ""
    consent_at: datetime | None = None
    consent_text: str = ""
    variables: dict = field(default_factory=dict)

    @property
    def has_consent(self):
        return bool(self.consent_source and self.consent_at and self.consent_text)


@dataclass(frozen=True)
class RowError:
    row: int
    field: str
    reason: str

    def as_dict(self):
        return {"row": self.row, "field": self.field, "reason": self.reason}


def column_name(header):
    """The field a header names, or None for a variable column."""
    key = re.sub(r"[\s\-]+", "_", header.strip().lower())
    return _BY_ALIAS.get(key) or _BY_ALIAS.get(key.replace("_", ""))


def variable_name(header):
    """A CSV header as a script variable's name (`Vorname` stays, `Straße Nr.` → `Strasse_Nr.`)."""
    text = header.strip()
    for umlaut, plain in (("ä", "ae"), ("ö", "oe"), ("ü", "ue"), ("Ä", "Ae"), ("Ö", "Oe"), ("Ü", "Ue"), ("ß", "ss")):
        text = text.replace(umlaut, plain)
    return re.sub(r"[^A-Za-z0-9_.]", "_", text)[:64] or "_"


def from_csv(header, lines, *, time_zone, now):
    """(rows, errors) of a CSV table's lines; raises ValueError when the header names
    no phone column."""
    names = [column_name(cell) for cell in header]
    if "phone" not in names:
        raise ValueError(f"The header names no phone column (found: {', '.join(h for h in header if h) or 'none'}); "
                         "name it 'phone' (or Telefon, Telefonnummer, Nummer).")
    rows, errors = [], []
    for line, cells in lines:
        record, variables = {}, {}
        for index, cell in enumerate(cells):
            if index >= len(header):
                if cell.strip():
                    errors.append(RowError(line, "", f"More cells ({len(cells)}) than the header has columns "
                                                     f"({len(header)})."))
                    break
                continue
            name = names[index]
            if name and name != "variables":
                record[name] = cell
            elif header[index]:
                variables[variable_name(header[index])] = cell
        else:
            record["variables"] = variables
            if "name" not in record:
                record["name"] = _full_name(variables)
            _take(record, line, rows, errors, time_zone=time_zone, now=now)
    return rows, errors


def _full_name(variables):
    """"Vorname Nachname" of a row's variables (either may be missing)."""
    lowered = {name.lower(): value.strip() for name, value in variables.items() if isinstance(value, str)}
    first = next((lowered[key] for key in FIRST_NAMES if lowered.get(key)), "")
    last = next((lowered[key] for key in LAST_NAMES if lowered.get(key)), "")
    return f"{first} {last}".strip()


def csv_contacts(data, *, time_zone, now):
    """(rows, errors, file info) of an uploaded CSV table (the API's and the admin's):
    CsvUnreadable or a ValidationFailed on `file` where it cannot be read."""
    header, lines, encoding, separator = csv_table(data, max_rows=MAX_CSV_ROWS)
    try:
        rows, errors = from_csv(header, lines, time_zone=time_zone, now=now)
    except ValueError as exc:
        raise ValidationFailed.field("file", str(exc)) from None
    return rows, errors, {"encoding": encoding, "separator": separator, "rows": len(lines)}


def from_json(items, *, time_zone, now, first_row=1):
    """(rows, errors) of JSON contact objects; their row numbers count from `first_row`."""
    rows, errors = [], []
    for index, item in enumerate(items):
        row = first_row + index
        if not isinstance(item, dict):
            errors.append(RowError(row, "", "Each contact is an object with at least 'phone'."))
            continue
        unknown = sorted(set(item) - set(ALIASES))
        if unknown:
            errors.append(RowError(row, unknown[0], f"Unknown field; send {', '.join(ALIASES)}."))
            continue
        _take(item, row, rows, errors, time_zone=time_zone, now=now)
    return rows, errors


def _take(record, row, rows, errors, *, time_zone, now):
    try:
        rows.append(_contact(record, row, time_zone=time_zone, now=now))
    except _Refused as exc:
        errors.append(RowError(row, exc.field, exc.reason))


class _Refused(Exception):
    def __init__(self, field_name, reason):
        super().__init__(reason)
        self.field, self.reason = field_name, reason


def _text(record, name):
    value = record.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Refused(name, "Must be text.")
    value = value.strip()
    if len(value) > LIMITS[name]:
        raise _Refused(name, f"At most {LIMITS[name]:,} characters.")
    return value


def _contact(record, row, *, time_zone, now):
    phone = record.get("phone")
    if not isinstance(phone, str) or not phone.strip():
        raise _Refused("phone", "No phone number.")
    try:
        e164 = to_e164(phone)
    except InvalidPhoneNumber as exc:
        raise _Refused("phone", str(exc)) from None
    return ContactRow(
        row=row, phone=e164, name=_text(record, "name"), b2b=_boolean(record.get("b2b")),
        consent_source=_text(record, "consentSource"), consent_text=_text(record, "consentText"),
        consent_at=_moment(record.get("consentAt"), time_zone=time_zone, now=now),
        variables=_variables(record.get("variables")),
    )


def _boolean(value):
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise _Refused("b2b", "true or false (ja/nein, x or empty).")


def _moment(value, *, time_zone, now):
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise _Refused("consentAt", "An ISO 8601 time, e.g. 2026-10-01T10:00:00+02:00, or 01.10.2026.")
    text = value.strip()
    zone = ZoneInfo(time_zone)
    german = _GERMAN_DATE.match(text)
    try:
        if german:
            day, month, year, hour, minute, second = german.groups()
            moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                              tzinfo=zone)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            if len(text) == 10:  # a date alone: its start in the tenant's zone
                moment = datetime.combine(moment.date(), time(0), tzinfo=zone)
            elif moment.tzinfo is None:
                moment = moment.replace(tzinfo=zone)
    except ValueError:
        raise _Refused("consentAt", "An ISO 8601 time, e.g. 2026-10-01T10:00:00+02:00, or 01.10.2026.") from None
    if moment > now:
        raise _Refused("consentAt", "Consent cannot be given in the future.")
    return moment


def _variables(value):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Refused("variables", "An object of names and texts, e.g. {\"firstName\": \"Jürgen\"}.")
    if len(value) > MAX_VARIABLES:
        raise _Refused("variables", f"At most {MAX_VARIABLES} variables.")
    variables = {}
    for name, text in value.items():
        if not VARIABLE.match(name):
            raise _Refused(f"variables.{name}", "Names are letters, digits, '_' and '.' (as {{firstName}}).")
        if isinstance(text, bool) or not isinstance(text, str | int | float):
            raise _Refused(f"variables.{name}", "Must be text.")
        text = str(text).strip()
        if len(text) > MAX_VARIABLE_CHARS:
            raise _Refused(f"variables.{name}", f"At most {MAX_VARIABLE_CHARS:,} characters.")
        variables[name] = text
    return variables
