"""A carrier's credentials: one JSON object, sealed whole on `Carrier.credentials_sealed`
(Fernet under a key derived from CARRIER_SIGNING_KEY, calls_app.signing), its fields
declared by the carrier's kind. A database copy alone reveals none of them; a secret
field is never shown back."""
import json
from collections.abc import Callable
from typing import Any

from calls_app.kinds.base import CredentialField
from calls_app.signing import seal, unseal
from console.errors import ValidationFailed


def credentials_of(carrier: Any) -> dict[str, str]:
    """The carrier's credentials; {} when it has none or they cannot be opened (another
    key sealed them: create_carrier --rotate stores them again)."""
    sealed = getattr(carrier, "credentials_sealed", "")
    if not sealed:
        return {}
    try:
        values = json.loads(unseal(sealed) or "{}")
    except ValueError:
        return {}
    return {str(name): str(value) for name, value in values.items()} if isinstance(values, dict) else {}


def credentials_seal(values: dict[str, str]) -> str:
    return seal(json.dumps(values, sort_keys=True, separators=(",", ":"))) if values else ""


def credentials_clean(fields: tuple[CredentialField, ...], given: dict[str, str], *, kind: str,
                      current: dict[str, str] | None = None,
                      check: Callable[[dict[str, str]], None] | None = None) -> dict[str, str]:
    """The values to store of a kind's `fields` from `given` (text as typed; a field not
    given keeps its `current` value, else its default): ValidationFailed naming the
    field for a missing or unfit one, or for a field the kind does not have; then the
    kind's `check` of them as a whole."""
    names = {field.name for field in fields}
    stray = sorted(name for name, value in given.items() if value and name not in names)
    if stray:
        raise ValidationFailed.field(stray[0], f"A field of no {kind} carrier.")
    values = {}
    for field in fields:
        raw = (given.get(field.name) or "").strip() or (current or {}).get(field.name, "") or field.default
        if not raw:
            if field.required:
                raise ValidationFailed.field(field.name, f"A {kind} carrier needs {field.option}.")
            continue
        try:
            values[field.name] = field.clean(raw) if field.clean else raw
        except ValueError as exc:
            raise ValidationFailed.field(field.name, str(exc)) from None
    if check is not None:
        check(values)
    return values


def credentials_shown(fields: tuple[CredentialField, ...], carrier: Any) -> dict[str, str]:
    """What may be shown of the carrier's credentials: every field but the secrets (stored ones as "••••")."""
    values = credentials_of(carrier)
    return {field.label: ("••••" if values.get(field.name) else "") if field.secret else values.get(field.name, "")
            for field in fields}
