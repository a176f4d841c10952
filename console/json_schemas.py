"""JSON Schemas that tenants write (an assistant's analysis schema, an HTTP tool's
parameters) and the values checked against them, in one place.

A tenant's schema is checked when it is saved: a document that is not a valid
Draft 2020-12 schema is a field error, so that nothing later (a tool call, a call's
analysis) trips over it. Schemas are bounded in size and nesting, and may not refer
to other documents: `$ref` to anything but a place in the schema itself (`#…`) is
refused, and the validator never fetches anything (the `referencing` registry holds
no remote resources), so a schema cannot make the server open a URL.
"""
import json

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

MAX_SCHEMA_BYTES = 20_000
MAX_ERRORS = 10


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
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path)
        return [f"Not a valid JSON Schema (Draft 2020-12): {exc.message}" + (f" (at {where})" if where else "")]
    foreign = sorted({ref for ref in _refs(schema) if not ref.startswith("#")})
    if foreign:
        return [f"References to other documents are not allowed ({', '.join(foreign[:3])}); use '#/$defs/…'."]
    if root_type is not None and schema.get("type") != root_type:
        return [f"The schema's root must say \"type\": \"{root_type}\"."]
    return []


def instance_errors(schema, instance):
    """What is wrong with `instance` against the (checked) `schema`: at most
    MAX_ERRORS sentences, each with the path of the value ("reason: … is not of type
    'string'"), or [] when it is valid."""
    validator = Draft202012Validator(schema)
    errors = []
    try:
        for error in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
            where = ".".join(str(part) for part in error.absolute_path)
            errors.append(f"{where}: {error.message}" if where else error.message)
            if len(errors) >= MAX_ERRORS:
                break
    except (Unresolvable, RecursionError) as exc:
        errors.append(f"The schema could not be applied: {exc.__class__.__name__}.")
    return [message[:500] for message in errors]
