"""The fields of each kind of calendar, declared once: the API's names, whether a field
is secret (sealed, never shown back) and whether it is required."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Field:
    name: str  # the API's name
    label: str  # German, for the admin
    secret: bool = False
    required: bool = True


KIND_FIELDS: dict[str, tuple[Field, ...]] = {
    "caldav": (Field("url", "Adresse des Kalenders (https)"), Field("username", "Benutzername"),
               Field("password", "App-Passwort", secret=True)),
    "graph": (Field("tenantId", "Verzeichnis-ID (Tenant)"), Field("clientId", "Anwendungs-ID (Client)"),
              Field("clientSecret", "Geheimer Clientschlüssel", secret=True), Field("mailbox", "Postfach")),
    "calcom": (Field("apiKey", "API-Schlüssel", secret=True), Field("eventTypeId", "Ereignistyp-ID")),
}
ALL_FIELDS = tuple(dict.fromkeys(field.name for fields in KIND_FIELDS.values() for field in fields))
