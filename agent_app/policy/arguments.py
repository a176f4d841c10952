"""Tool arguments from the tool's own parameter schema: the property names a tool uses
for what the policy fills in are matched, values cut to their maxLength, the whole
checked by console.json_schemas (patterns matched by RE2, in bounded time)."""
import json
import re
from functools import lru_cache

from console.json_schemas import SchemaUnusable, instance_valid, schema_problems

# The names tools use for what the policy fills in, compared without case, "_" and "-".
_ROLES = {
    "phone": ("phone", "phonenumber", "number", "callbacknumber", "e164", "telefon", "telefonnummer", "rufnummer",
              "nummer", "tel"),
    "time": ("preferredtime", "preferredat", "when", "time", "datetime", "callbacktime", "wunschzeit", "zeit",
             "termin", "date"),
    "note": ("note", "notes", "reason", "message", "summary", "concern", "topic", "anliegen", "notiz", "grund",
             "comment"),
    "query": ("query", "question", "q", "search", "text", "frage", "suchbegriff", "suche"),
    "target": ("target", "name", "to", "destination", "ziel"),
    "reason": ("reason", "note", "grund"),
}


def _key(name):
    return re.sub(r"[_\-\s]", "", name.lower())


def property_name(schema, role):
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return None
    for alias in _ROLES[role]:
        for name in properties:
            if _key(name) == alias:
                return name
    return None


def required_names(schema):
    required = schema.get("required") if isinstance(schema, dict) else None
    return {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()


def property_spec(schema, role):
    name = property_name(schema, role)
    spec = schema["properties"][name] if name else None
    return spec if isinstance(spec, dict) else {}


class _BrokenSchema(Exception):
    pass


@lru_cache(maxsize=256)
def _usable(schema_text):
    """Whether the schema (by its JSON text: a turn asks about the same few schemas
    again and again) can be used: a valid Draft 2020-12 schema of bounded size whose
    patterns RE2 can match (console.json_schemas, the one checker of such schemas)."""
    return not schema_problems(json.loads(schema_text))


def _fits(schema, arguments):
    """Whether `arguments` validate against `schema`; _BrokenSchema when it cannot be
    checked (a client may send any schema) or not within the validation's time bound:
    then its tool is not called at all."""
    if not _usable(json.dumps(schema, sort_keys=True, default=str)):
        raise _BrokenSchema()
    try:
        return instance_valid(schema, arguments)
    except SchemaUnusable as exc:
        raise _BrokenSchema() from exc


def tool_arguments(schema, values):
    """The arguments for a tool with parameters `schema`, from `values` (role → value;
    None left out): each under the tool's own name for it, strings cut to their
    maxLength, checked against the schema. Optional values that do not fit are dropped;
    None when the arguments still do not validate or the schema cannot be checked."""
    arguments = {}
    for role, value in values.items():
        if value in (None, ""):
            continue
        name = property_name(schema, role)
        if name is None:
            continue
        spec = schema["properties"][name]
        if isinstance(value, str) and isinstance(spec, dict) and isinstance(spec.get("maxLength"), int):
            value = value[:spec["maxLength"]].rstrip()
        arguments[name] = value
    try:
        if _fits(schema, arguments):
            return arguments
        required = required_names(schema)
        for name in [name for name in reversed(list(arguments)) if name not in required]:
            del arguments[name]
            if _fits(schema, arguments):
                return arguments
    except _BrokenSchema:
        pass
    return None



def offered_call(context, name, values):
    """[(name, arguments)] of tool `name` when the conversation offers it and its
    arguments validate, else []."""
    if name not in context.tools:
        return []
    arguments = tool_arguments(context.tools[name], values)
    return [] if arguments is None else [(name, arguments)]
