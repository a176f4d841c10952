"""Every schema rule and cross-field rule: the problem names its JSON path and an
invalid document changes nothing."""
import pytest

from registry_app.errors import InvalidRegistryDocument
from registry_app.models import Lane, RegistryVersion
from registry_app.validation import (
    document_problems,
    json_path,
    passes_compiled_check,
    reference_problems,
    registry_schema,
)
from tests.registry_app.conftest import lane, load


def problems_of(document):
    return [str(problem) for problem in document_problems(document)]


def assert_rejected_unchanged(document, path, fragment):
    """Loading fails, names `path: …fragment…`, and the current version is untouched.

    Also: the quick compiled check and jsonschema agree on the document."""
    assert passes_compiled_check(document) == (not reference_problems(document))
    before = list(RegistryVersion.objects.values_list("number", "sha256"))
    lanes_before = Lane.objects.count()
    with pytest.raises(InvalidRegistryDocument) as caught:
        load(document)
    messages = [str(problem) for problem in caught.value.problems]
    assert any(m.startswith(f"{path}: ") and fragment in m for m in messages), messages
    assert list(RegistryVersion.objects.values_list("number", "sha256")) == before
    assert Lane.objects.count() == lanes_before
    return messages


@pytest.fixture
def doc(loaded, registry_document):
    """A valid document already loaded, to be broken by each test."""
    return registry_document


def test_shipped_document_is_valid(registry_document):
    assert problems_of(registry_document) == []
    assert passes_compiled_check(registry_document) and reference_problems(registry_document) == []


def test_json_path_renders_indexes_and_fields():
    assert json_path(["models", 7, "cost", "unit"]) == "models[7].cost.unit"
    assert json_path([]) == "$"


def test_schema_is_draft_2020_12():
    assert registry_schema()["$schema"] == "https://json-schema.org/draft/2020-12/schema"


# --- schema rules -----------------------------------------------------------------

# (rule, the value's path, a wrong value, what the message says)
WRONG_VALUES = [
    ("cost unit outside the list", ("models", 7, "cost", "unit"), "min", "'min' is not one of"),
    ("unknown status", ("models", 2, "status"), "online", "'online' is not one of"),
    ("unknown quality tier", ("models", 9, "quality_tier"), "premium", "'premium' is not one of"),
    ("unknown latency class", ("models", 0, "latency_class"), "instant", "'instant' is not one of"),
    ("unknown hosting", ("models", 3, "hosting"), "cloud", "'cloud' is not one of"),
    ("unknown capability", ("models", 1, "capability"), "vision", "'vision' is not one of"),
    ("unknown cost model", ("models", 3, "cost", "model"), "per-request", "'per-request' is not one of"),
    ("negative eur", ("models", 3, "cost", "eur"), -1, "less than the minimum of 0"),
    ("eur as text", ("models", 3, "cost", "eur"), "1.80", "is not of type 'number', 'null'"),
    ("priority not an integer", ("models", 0, "priority"), 1.5, "is not of type 'integer'"),
    ("malformed language", ("models", 0, "params", "languages"), ["German"], "does not match"),
    ("streaming not boolean", ("models", 0, "params", "streaming"), "yes", "is not of type 'boolean'"),
    ("health a number", ("models", 0, "health"), 5, "is not of type 'string', 'null'"),
    ("updated in another format", ("updated",), "18.11.2026", "does not match"),
]


@pytest.mark.parametrize("parts, value, fragment", [case[1:] for case in WRONG_VALUES],
                         ids=[case[0] for case in WRONG_VALUES])
def test_wrong_value_is_rejected_with_its_path(doc, parts, value, fragment):
    target = doc
    for part in parts[:-1]:
        target = target[part]
    target[parts[-1]] = value
    path = json_path(parts) + ("[0]" if isinstance(value, list) else "")
    assert_rejected_unchanged(doc, path, fragment)

def test_cost_without_eur_is_rejected(doc):
    del doc["models"][5]["cost"]["eur"]
    assert_rejected_unchanged(doc, "models[5].cost", "'eur' is a required property")


def test_unknown_entry_field_is_rejected(doc):
    doc["models"][4]["colour"] = "blue"
    assert_rejected_unchanged(doc, "models[4]", "('colour' was unexpected)")


def test_unknown_top_level_field_is_rejected(doc):
    doc["owner"] = "someone"
    assert_rejected_unchanged(doc, "$", "('owner' was unexpected)")


def test_missing_entry_field_is_rejected(doc):
    del doc["models"][6]["endpoint"]
    assert_rejected_unchanged(doc, "models[6]", "'endpoint' is a required property")


def test_missing_top_level_field_is_rejected(doc):
    del doc["capabilities"]
    assert_rejected_unchanged(doc, "$", "'capabilities' is a required property")


def test_capabilities_outside_the_five_are_rejected(doc):
    doc["capabilities"].append("vision")
    assert_rejected_unchanged(doc, "capabilities[5]", "'vision' is not one of")


def test_status_legend_with_unknown_status_is_rejected(doc):
    doc["status_legend"]["online"] = "läuft"
    assert_rejected_unchanged(doc, "status_legend", "'online' is not one of")


def test_document_that_is_not_an_object_is_rejected(db):
    with pytest.raises(InvalidRegistryDocument) as caught:
        load([1, 2])
    assert [str(p) for p in caught.value.problems] == ["$: [1, 2] is not of type 'object'"]
    assert not RegistryVersion.objects.exists()


# --- cross-field rules --------------------------------------------------------------

def test_duplicate_id_is_rejected_naming_both_places(doc):
    doc["models"][4]["id"] = doc["models"][1]["id"]
    assert_rejected_unchanged(doc, "models[4].id", "duplicate id 'chat-claude-abo' (first used at models[1])")


def test_capability_missing_from_the_documents_capabilities_is_rejected(doc):
    doc["capabilities"].remove("code")
    assert_rejected_unchanged(doc, "models[5].capability", "'code' is not one of the document's capabilities")


def test_access_that_is_neither_a_layer_nor_a_listed_word_is_rejected(doc):
    doc["models"][0]["access"] = "hintertür"
    assert_rejected_unchanged(doc, "models[0].access", "'hintertür' is neither an integration layer")


def test_access_may_name_a_layer_or_a_listed_word(registry_document):
    for index, access in enumerate(["voice-gateway", "geplant", "kein-wrapper", "api-key", "self-hosted"]):
        registry_document["models"][index]["access"] = access
    assert problems_of(registry_document) == []


def test_self_hosted_lane_with_paid_cost_model_is_rejected(doc):
    lane(doc, "tts-espeak-de")["cost"]["model"] = "per-character"
    index = doc["models"].index(lane(doc, "tts-espeak-de"))
    assert_rejected_unchanged(doc, f"models[{index}].cost.model", "a self-hosted lane has cost model 'self-hosted'")


def test_self_hosted_cost_model_on_an_api_lane_is_rejected(doc):
    lane(doc, "chat-mistral-api")["cost"]["model"] = "self-hosted"
    index = doc["models"].index(lane(doc, "chat-mistral-api"))
    assert_rejected_unchanged(doc, f"models[{index}].cost.model", "needs hosting 'self-hosted', not 'api'")


def test_live_lane_without_endpoint_is_rejected(doc):
    doc["models"][0]["endpoint"] = ""
    assert_rejected_unchanged(doc, "models[0].endpoint", "a live lane needs an endpoint")


def test_lane_that_is_not_live_may_have_no_endpoint_or_health(registry_document):
    entry = lane(registry_document, "stt-whisper-local")
    assert entry["status"] == "eval" and entry["endpoint"] == "" and entry["health"] is None
    assert problems_of(registry_document) == []


def test_updated_that_is_not_a_real_date_is_rejected(doc):
    doc["updated"] = "2026-02-30"
    assert_rejected_unchanged(doc, "updated", "'2026-02-30' is not a real date")


def test_status_missing_from_the_legend_is_rejected(doc):
    del doc["status_legend"]["stub"]
    index = doc["models"].index(lane(doc, "voice-agent-module"))
    assert_rejected_unchanged(doc, f"models[{index}].status", "'stub' is not described in status_legend")


def test_eur_zero_and_null_are_both_valid(registry_document):
    registry_document["models"][3]["cost"]["eur"] = None
    registry_document["models"][4]["cost"]["eur"] = 0
    assert problems_of(registry_document) == []


def test_every_problem_is_reported_at_once_in_document_order(doc):
    doc["models"][9]["quality_tier"] = "premium"
    doc["models"][2]["status"] = "online"
    doc["models"][0]["endpoint"] = ""
    messages = assert_rejected_unchanged(doc, "models[2].status", "'online'")
    paths = [m.split(": ")[0] for m in messages]
    assert paths == ["models[0].endpoint", "models[2].status", "models[9].quality_tier"]
