"""JSON Schemas that tenants write (an assistant's analysis schema, an HTTP tool's
parameters) and clients send (a tool's parameters in /v1/chat/completions), and the
values checked against them, in one place.

A tenant's schema is checked when it is saved: a document that is not a valid
Draft 2020-12 schema is a field error, so that nothing later (a tool call, a call's
analysis) trips over it. Schemas are bounded in size and nesting, and may not refer
to other documents: `$ref` to anything but a place in the schema itself (`#…`) is
refused, and the validator never fetches anything (the `referencing` registry holds
no remote resources), so a schema cannot make the server open a URL.

Regular expressions (`pattern`, the keys of `patternProperties`, which
`additionalProperties` and `unevaluatedProperties` consult too) are matched by RE2
(google-re2), an engine without backtracking: its time is linear in the text, so no
pattern (`^(.+)+x$`) can hold a worker or, through the GIL, an event loop. Python's
backtracking `re` never sees a tenant's pattern: jsonschema's keyword modules match
through `_RE2_ONLY`, which offers `search` and nothing else (a newer jsonschema that
matched another way would fail loudly, not quietly backtrack). A pattern RE2 cannot
compile (lookaround, backreferences) is refused at save, through the metaschema's
`format: regex`, which is checked by RE2 too. Every validation of a value has a time
bound (VALIDATION_SECONDS, checked before each keyword is applied: a schema whose
`$ref`s multiply the work cannot run on), `uniqueItems` is linear, and a nested
`$schema` never switches to another draft's (unbounded) validator.
"""
import json
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from types import SimpleNamespace
from typing import Any

import jsonschema._keywords
import jsonschema._legacy_keywords
import jsonschema._utils
import re2
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

MAX_SCHEMA_BYTES = 20_000
MAX_ERRORS = 10
# The most time one value's validation may take (a few milliseconds is usual).
VALIDATION_SECONDS = 0.5


# --- Regular expressions: RE2 -------------------------------------------------------------

def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is the tenant's field error, not a line on stderr
    return options


_OPTIONS = _options()


def regex_compiled(pattern: str) -> Any:
    """`pattern` compiled by RE2 (cached by the library), or re2.error."""
    return re2.compile(pattern, _OPTIONS)


def regex_search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches anywhere in `text` (JSON Schema's `pattern`: not
    anchored), in time linear in the text."""
    return regex_compiled(pattern).search(text) is not None


def regex_problem(pattern: str) -> str:
    """Why RE2 cannot use `pattern`, or "" when it can."""
    try:
        regex_compiled(pattern)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else ""
        return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    return ""


_RE2_ONLY = SimpleNamespace(search=regex_search)
for _module in (jsonschema._keywords, jsonschema._legacy_keywords, jsonschema._utils):
    _module.re = _RE2_ONLY

_FORMATS = FormatChecker()


@_FORMATS.checks("regex", raises=re2.error)
def _is_regex(instance: object) -> bool:
    if isinstance(instance, str):
        regex_compiled(instance)
    return True


# --- The validator of tenants' schemas: bounded in time -------------------------------------

class ValidationTooSlow(Exception):
    """The validation ran past its deadline."""


_deadline: ContextVar[float] = ContextVar("json_schema_deadline", default=float("inf"))


def _bounded(keyword: Any) -> Any:
    def applied(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if time.monotonic() > _deadline.get():
            raise ValidationTooSlow()
        return keyword(validator, value, instance, schema)
    return applied


def _canonical(value: object) -> object:
    """A hashable stand-in of a JSON value, equal for values JSON Schema calls equal
    (1 and 1.0; not 1 and true)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, (int, float, str)):
        return value
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, Mapping):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("other", repr(value))


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """jsonschema's uniqueItems compares every pair of unsortable items: linear here."""
    if unique and validator.is_type(instance, "array") and len({_canonical(item) for item in instance}) < len(
            instance):
        yield ValidationError(f"{instance!r} has non-unique elements")


TenantSchemaValidator: Any = validators.extend(Draft202012Validator, {
    name: _bounded(keyword)
    for name, keyword in {**Draft202012Validator.VALIDATORS, "uniqueItems": _unique_items}.items()})
_stock_evolve = TenantSchemaValidator.evolve


def _evolve(self: Any, **changes: Any) -> Any:
    # jsonschema picks a subschema's validator by its `$schema`: another draft's would
    # run without the deadline. Every subschema of a tenant's is Draft 2020-12.
    schema = changes.get("schema", self.schema)
    if isinstance(schema, dict) and "$schema" in schema:
        changes["schema"] = {key: value for key, value in schema.items() if key != "$schema"}
    return _stock_evolve(self, **changes)


TenantSchemaValidator.evolve = _evolve


class SchemaUnusable(Exception):
    """The schema could not be applied to the value (in time, or at all)."""


def _errors(schema: Mapping[str, Any], instance: object) -> list[ValidationError]:
    """Every problem of `instance`, or SchemaUnusable; at most VALIDATION_SECONDS."""
    token = _deadline.set(time.monotonic() + VALIDATION_SECONDS)
    try:
        return list(TenantSchemaValidator(schema).iter_errors(instance))
    except ValidationTooSlow:
        raise SchemaUnusable(f"The schema could not be applied within {VALIDATION_SECONDS} s.") from None
    except re2.error:
        raise SchemaUnusable("The schema has a pattern that cannot be used.") from None
    except (Unresolvable, RecursionError, UnicodeError) as exc:
        raise SchemaUnusable(f"The schema could not be applied: {exc.__class__.__name__}.") from None
    finally:
        _deadline.reset(token)


def instance_valid(schema: Mapping[str, Any], instance: object) -> bool:
    """Whether `instance` fits the (checked) `schema`; SchemaUnusable when that cannot
    be known within VALIDATION_SECONDS."""
    return not _errors(schema, instance)


def _refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                yield value
            yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def schema_problems(schema, *, root_type=None):
    """Why `schema` cannot be used (English sentences), or [] when it is a valid
    Draft 2020-12 schema of at most MAX_SCHEMA_BYTES, without references to other
    documents, and (with `root_type`) whose root says `"type": root_type`."""
    if not isinstance(schema, dict):
        return ["Send a JSON Schema as an object, e.g. {\"type\": \"object\", \"properties\": {…}}."]
    size = len(json.dumps(schema, ensure_ascii=False).encode())
    if size > MAX_SCHEMA_BYTES:
        return [f"The schema has {size} bytes; at most {MAX_SCHEMA_BYTES} are allowed."]
    try:
        Draft202012Validator.check_schema(schema, format_checker=_FORMATS)
    except SchemaError as exc:
        if exc.validator == "format" and isinstance(exc.instance, str):
            where = "/".join(str(part) for part in exc.absolute_path)
            return [f"The pattern {exc.instance[:100]!r} cannot be used: {regex_problem(exc.instance)}. Patterns are "
                    f"matched by RE2: no lookaround, no backreferences (at {where})."]
        where = "/".join(str(part) for part in exc.absolute_path)
        return [f"Not a valid JSON Schema (Draft 2020-12): {exc.message}" + (f" (at {where})" if where else "")]
    foreign = sorted({ref for ref in _refs(schema) if not ref.startswith("#")})
    if foreign:
        return [f"References to other documents are not allowed ({', '.join(foreign[:3])}); use '#/$defs/…'."]
    if root_type is not None and schema.get("type") != root_type:
        return [f"The schema's root must say \"type\": \"{root_type}\"."]
    return []


def instance_errors(schema: Mapping[str, Any], instance: object) -> list[str]:
    """What is wrong with `instance` against the (checked) `schema`: at most
    MAX_ERRORS sentences, each with the path of the value ("reason: … is not of type
    'string'"), or [] when it is valid. A schema that cannot be applied within
    VALIDATION_SECONDS is one sentence saying so."""
    try:
        found = _errors(schema, instance)
    except SchemaUnusable as exc:
        return [str(exc)]
    errors = []
    for error in sorted(found, key=lambda e: list(map(str, e.absolute_path)))[:MAX_ERRORS]:
        where = ".".join(str(part) for part in error.absolute_path)
        errors.append(f"{where}: {error.message}" if where else error.message)
    return [message[:500] for message in errors]
