"""Validation of a registry document: the shipped JSON Schema, then the cross-field
rules of CONTRACT §7 that a schema cannot express.

Every problem is reported with the JSON path of the offending value
(`models[7].cost.unit: 'min' is not one of [...]`), in document order. The cross-field
rules run on whatever parts of the document are well-formed, so one run reports
every problem rather than stopping at the first failing layer.
"""
import datetime
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import fastjsonschema
from jsonschema import Draft202012Validator

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "registry.schema.json"

# `access` names an integration layer of the document or one of these words (spec §2).
ACCESS_WORDS = ("geplant", "kein-wrapper", "api-key", "self-hosted")
SELF_HOSTED = "self-hosted"


@dataclass(frozen=True)
class Problem:
    parts: tuple  # ("models", 7, "cost", "unit")
    message: str

    @property
    def path(self):
        return json_path(self.parts)

    def __str__(self):
        return f"{self.path}: {self.message}"


@lru_cache(maxsize=1)
def registry_schema():
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    schema = registry_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _enum(name):
    return registry_schema()["$defs"][name]["enum"]


def json_path(parts):
    """`("models", 7, "cost", "unit")` → `models[7].cost.unit`; the root is `$`."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "$"


def _document_order(parts):
    # Indexes sort numerically; a sort is stable, so problems of one value keep their order.
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, part) for part in parts)


@lru_cache(maxsize=1)
def _compiled_check():
    """The same schema compiled to Python by fastjsonschema: about ten times faster
    than jsonschema on a valid document (a 10,000-lane registry in well under a
    second), but it stops at the first problem, so it only answers "valid?"."""
    # Formats are annotations for jsonschema too (a real date is a cross-field rule);
    # no defaults are filled in, the document is never changed.
    return fastjsonschema.compile(registry_schema(), use_formats=False, use_default=False,
                                  detailed_exceptions=False)


def passes_compiled_check(document):
    try:
        _compiled_check()(document)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def reference_problems(document):
    """Every schema problem, from jsonschema (the reference implementation)."""
    return [Problem(tuple(error.absolute_path), error.message) for error in _validator().iter_errors(document)]


def schema_problems(document):
    # jsonschema reports every problem with its path; it runs when the quick
    # compiled check finds something (or when the two disagreed, jsonschema decides).
    if passes_compiled_check(document):
        return []
    return reference_problems(document)


def _entries(document):
    """(index, entry) for the entries that are objects; others are schema problems."""
    models = document.get("models") if isinstance(document, dict) else None
    if not isinstance(models, list):
        return []
    return [(index, entry) for index, entry in enumerate(models) if isinstance(entry, dict)]


def _check_updated(document):
    updated = document.get("updated")
    if isinstance(updated, str):
        try:
            datetime.date.fromisoformat(updated)
        except ValueError:
            yield Problem(("updated",), f"{updated!r} is not a real date (YYYY-MM-DD)")


def _check_unique_ids(entries):
    first_seen = {}
    for index, entry in entries:
        lane_id = entry.get("id")
        if not isinstance(lane_id, str):
            continue
        if lane_id in first_seen:
            yield Problem(("models", index, "id"), f"duplicate id {lane_id!r} (first used at models[{first_seen[lane_id]}])")
        else:
            first_seen[lane_id] = index


def _check_entry(index, entry, capabilities, layers, legend):
    at = ("models", index)
    capability = entry.get("capability")
    if capability in _enum("capability") and capabilities is not None and capability not in capabilities:
        yield Problem((*at, "capability"), f"{capability!r} is not one of the document's capabilities {sorted(capabilities)}")

    access = entry.get("access")
    if isinstance(access, str) and access not in ACCESS_WORDS and access not in layers:
        yield Problem((*at, "access"), f"{access!r} is neither an integration layer ({', '.join(sorted(layers)) or 'none'}) "
                                      f"nor one of {', '.join(ACCESS_WORDS)}")

    status = entry.get("status")
    if status in _enum("status") and legend is not None and status not in legend:
        yield Problem((*at, "status"), f"{status!r} is not described in status_legend")

    hosting = entry.get("hosting")
    cost = entry.get("cost")
    cost_model = cost.get("model") if isinstance(cost, dict) else None
    if isinstance(hosting, str) and isinstance(cost_model, str) and (hosting == SELF_HOSTED) != (cost_model == SELF_HOSTED):
        if hosting == SELF_HOSTED:
            yield Problem((*at, "cost", "model"), f"a self-hosted lane has cost model 'self-hosted', not {cost_model!r}")
        else:
            yield Problem((*at, "cost", "model"), f"cost model 'self-hosted' needs hosting 'self-hosted', not {hosting!r}")

    endpoint = entry.get("endpoint")
    if status == "live" and (endpoint is None or (isinstance(endpoint, str) and not endpoint.strip())):
        yield Problem((*at, "endpoint"), "a live lane needs an endpoint")


def cross_field_problems(document):
    if not isinstance(document, dict):
        return []
    capabilities = document.get("capabilities")
    capabilities = {c for c in capabilities if isinstance(c, str)} if isinstance(capabilities, list) else None
    layers = document.get("integration_layers")
    layers = set(layers) if isinstance(layers, dict) else set()
    legend = document.get("status_legend")
    legend = set(legend) if isinstance(legend, dict) else None
    entries = _entries(document)
    problems = [*_check_updated(document), *_check_unique_ids(entries)]
    for index, entry in entries:
        problems.extend(_check_entry(index, entry, capabilities, layers, legend))
    return problems


def document_problems(document):
    """Every problem of `document` with its JSON path, in document order; [] if valid.

    A cross-field rule skips values the schema already rejects (an unknown status is
    reported once, not also as missing from the legend)."""
    problems = schema_problems(document) + cross_field_problems(document)
    return sorted(problems, key=lambda problem: _document_order(problem.parts))
