"""Tenants' JSON Schemas (console.json_schemas): patterns are matched by RE2, in time
linear in the text; what RE2 cannot match is refused at save; every validation of a
value is bounded in time, whatever the schema's shape."""
import time

import jsonschema._keywords
import jsonschema._legacy_keywords
import jsonschema._utils
import pytest

from console.json_schemas import VALIDATION_SECONDS, instance_errors, instance_valid, schema_problems

EVIL = "^(.+)+x$"  # Python's backtracking re: 28 characters take about ten seconds, 40 take hours


def timed(function, *args):
    started = time.monotonic()
    return function(*args), time.monotonic() - started


@pytest.mark.parametrize("schema, instance", [
    ({"type": "object", "properties": {"summary": {"type": "string", "pattern": EVIL}}}, {"summary": "a" * 5_000}),
    ({"type": "object", "patternProperties": {EVIL: {}, "^a": {"type": "integer"}}}, {"a" * 5_000: "x"}),
    ({"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False}, {"a" * 5_000: 1}),
    ({"type": "object", "patternProperties": {EVIL: {}}, "unevaluatedProperties": False}, {"a" * 5_000: 1}),
    # A nested $schema must not switch to another draft's validator (and its engine).
    ({"type": "object", "properties": {"q": {"$schema": "http://json-schema.org/draft-07/schema#",
                                             "pattern": EVIL}}}, {"q": "a" * 5_000}),
])
def test_a_catastrophic_pattern_is_matched_in_linear_time(schema, instance):
    assert schema_problems(schema, root_type="object") == []
    errors, seconds = timed(instance_errors, schema, instance)
    assert errors and seconds < 0.2, (errors, seconds)


def test_patterns_still_mean_what_they_say():
    schema = {"type": "object", "properties": {"datum": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}},
              "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False}
    assert instance_valid(schema, {"datum": "2026-12-01", "x-a": 1})
    assert instance_errors(schema, {"datum": "morgen"}) == ["datum: 'morgen' does not match '^\\\\d{4}-\\\\d{2}-\\\\d{2}$'"]
    assert not instance_valid(schema, {"x-a": "eins"}) and not instance_valid(schema, {"y": 1})


def test_jsonschemas_keywords_match_only_through_re2():
    for module in (jsonschema._keywords, jsonschema._legacy_keywords, jsonschema._utils):
        assert vars(module.re) == {"search": module.re.search}, module  # no compile, match, … left to backtrack


@pytest.mark.parametrize("where", [
    {"properties": {"a": {"type": "string", "pattern": "(?=a)b"}}},
    {"properties": {"a": {"type": "string", "pattern": r"(a)\1"}}},
    {"patternProperties": {"(?<!x)y": {}}},
])
def test_a_pattern_re2_cannot_match_is_refused_at_save(where):
    problems = schema_problems({"type": "object", **where}, root_type="object")
    assert len(problems) == 1 and "cannot be used" in problems[0] and "RE2" in problems[0], problems


def test_a_schema_whose_references_multiply_the_work_is_cut_at_the_time_bound():
    defs = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(40)}
    schema = {"type": "object", "$defs": {**defs, "d40": {"type": "string"}},
              "properties": {"a": {"$ref": "#/$defs/d0"}}}  # 2 ** 40 checks of one string
    assert schema_problems(schema, root_type="object") == []
    errors, seconds = timed(instance_errors, schema, {"a": "x"})
    assert errors == [f"The schema could not be applied within {VALIDATION_SECONDS} s."]
    assert seconds < VALIDATION_SECONDS + 0.5


def test_unique_items_is_linear_and_keeps_json_equality():
    schema = {"type": "array", "uniqueItems": True}
    items = [{"n": index} for index in range(20_000)]  # unsortable: jsonschema compared every pair
    errors, seconds = timed(instance_errors, schema, items)
    # Pairwise, 20,000 items are 2e8 comparisons (minutes); linear is milliseconds. The
    # bound is far from both, so a busy machine does not tip it.
    assert errors == [] and seconds < 10
    assert not instance_valid(schema, [{"a": [1]}, {"a": [1.0]}])
    assert instance_valid(schema, [1, True]) and instance_valid(schema, [0, False]) and instance_valid(schema, [{}, []])
