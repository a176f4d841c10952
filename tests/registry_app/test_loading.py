"""load_registry / export_registry / registry_diff: all-or-nothing, versioned."""
import io
import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from registry_app.models import IntegrationLayer, Lane, RegistryVersion
from tests.registry_app.conftest import lane, load, write_json


def run(name, *args):
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_example_document_loads_and_exports_equal(db, tmp_path, registry_document):
    out, _ = run("load_registry", str(write_json(tmp_path, registry_document)), "--by", "olga")
    assert "as version" in out and "17 lanes" in out
    exported, _ = run("export_registry")
    assert json.loads(exported) == registry_document
    version = RegistryVersion.objects.get()
    assert (version.version, str(version.updated), version.loaded_by) == ("2026.11.5", "2026-11-28", "olga")
    assert version.loaded_at is not None and len(version.sha256) == 64


def test_load_creates_browsing_rows_for_lanes_and_layers(loaded):
    assert list(Lane.objects.values_list("lane_id", flat=True)) == [m["id"] for m in loaded["models"]]
    assert set(IntegrationLayer.objects.values_list("name", flat=True)) == set(loaded["integration_layers"])
    espeak = Lane.objects.get(lane_id="tts-espeak-de")
    assert (espeak.capability, espeak.cost_model, espeak.cost_eur, espeak.params["voices"]) == (
        "tts", "self-hosted", 0, ["de", "de+f3"])
    assert Lane.objects.get(lane_id="stt-deepgram").cost_eur == Decimal("0.004")


def test_invalid_document_prints_every_problem_with_its_path_and_changes_nothing(loaded, tmp_path):
    before = list(RegistryVersion.objects.values_list("number", "sha256"))
    loaded["models"][7]["cost"]["unit"] = "min"
    loaded["models"][2]["status"] = "online"
    path = write_json(tmp_path, loaded)
    err = io.StringIO()
    with pytest.raises(CommandError, match="2 problem"):
        call_command("load_registry", str(path), stdout=io.StringIO(), stderr=err)
    assert "models[7].cost.unit: 'min' is not one of" in err.getvalue()
    assert "models[2].status: 'online' is not one of" in err.getvalue()
    assert list(RegistryVersion.objects.values_list("number", "sha256")) == before
    assert Lane.objects.get(lane_id="tts-espeak-de").cost_unit == "compute"


def test_file_that_is_not_json_is_a_clear_error(db, tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"hub": ', encoding="utf-8")
    with pytest.raises(CommandError, match="not valid JSON.*line 1"):
        run("load_registry", str(path))
    assert not RegistryVersion.objects.exists()


def test_missing_file_is_a_clear_error(db, tmp_path):
    with pytest.raises(CommandError, match="Cannot read"):
        run("load_registry", str(tmp_path / "nowhere.json"))


def test_same_document_twice_creates_no_new_version(loaded, tmp_path):
    # Formatting differs, content does not.
    path = tmp_path / "same.json"
    path.write_text(json.dumps(loaded, indent=4, ensure_ascii=True), encoding="utf-8")
    out, _ = run("load_registry", str(path))
    assert "Unchanged" in out
    assert RegistryVersion.objects.count() == 1


def test_load_a_then_b_then_a_again_makes_a_current_again(loaded, registry_document):
    document_b = json.loads(json.dumps(loaded))
    document_b["version"] = "2026.11.6"
    lane(document_b, "tts-azure-de")["status"] = "key-gated"
    first = RegistryVersion.objects.get()
    second = load(document_b).version
    third = load(loaded)
    assert third.created and third.version.number > second.number > first.number
    assert third.version.sha256 == first.sha256
    assert RegistryVersion.objects.current() == third.version
    assert Lane.objects.get(lane_id="tts-azure-de").status == "key-ready"


def test_diff_names_exactly_the_changed_fields(loaded):
    document_b = json.loads(json.dumps(loaded))
    document_b["version"] = "2026.11.6"
    lane(document_b, "tts-azure-de")["status"] = "key-gated"
    lane(document_b, "stt-deepgram")["cost"]["eur"] = 0.0043
    document_b["models"] = [m for m in document_b["models"] if m["id"] != "chat-gpt-api"]
    document_b["models"].append({**lane(loaded, "tts-espeak-de"), "id": "tts-espeak-en", "name": "eSpeak NG English"})
    load(document_b)
    out, _ = run("registry_diff")
    lines = out.splitlines()
    assert lines[0].startswith("Version ") and lines[0].endswith("(2026.11.6):")
    assert "document version: '2026.11.5' → '2026.11.6'" in lines
    assert "+ tts-espeak-en" in lines and "- chat-gpt-api" in lines
    assert lines[lines.index("~ stt-deepgram") + 1] == "    cost.eur: 0.004 → 0.0043"
    assert lines[lines.index("~ tts-azure-de") + 1] == "    status: 'key-ready' → 'key-gated'"
    changed = [line for line in lines if line.startswith("~ ")]
    assert changed == ["~ stt-deepgram", "~ tts-azure-de"]
    assert lines[-1] == "1 added, 1 removed, 2 changed."


def test_diff_of_two_named_versions(loaded):
    document_b = json.loads(json.dumps(loaded))
    lane(document_b, "chat-llama-local")["params"]["languages"] = ["de"]
    a = RegistryVersion.objects.get().number
    b = load(document_b).version.number
    load(loaded)
    out, _ = run("registry_diff", str(a), str(b))
    assert "    params.languages: ['de', 'en'] → ['de']" in out.splitlines()
    out, _ = run("registry_diff", str(b), str(b + 1))
    assert "    params.languages: ['de'] → ['de', 'en']" in out.splitlines()


def test_diff_with_unknown_version_is_a_clear_error(loaded):
    with pytest.raises(CommandError, match="No registry version 99"):
        run("registry_diff", "99")


def test_diff_of_the_first_version_alone_asks_for_two(loaded):
    with pytest.raises(CommandError, match="first one"):
        run("registry_diff")


def test_export_without_a_registry_fails(db):
    with pytest.raises(CommandError, match="No registry"):
        run("export_registry")


def test_export_an_older_version(loaded):
    document_b = json.loads(json.dumps(loaded))
    document_b["version"] = "2026.12.0"
    first = RegistryVersion.objects.get().number
    load(document_b)
    exported, _ = run("export_registry", "--number", str(first))
    assert json.loads(exported) == loaded
