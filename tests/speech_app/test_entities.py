"""Numbers heard (speech_app.entities): a corpus of German transcript strings with
Whisper's habits, each with the entities it must give on a fixed clock (Wednesday,
25 November 2026, 16:00 in Berlin)."""
import datetime
import json
import zoneinfo
from pathlib import Path

import pytest

from speech_app.entities import entities, number_of, ordinal_of

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")
NOW = datetime.datetime(2026, 11, 25, 16, 0, tzinfo=BERLIN)
CASES = json.loads((Path(__file__).parent / "entity_cases.json").read_text(encoding="utf-8"))


def without_text(found):
    return [{key: value for key, value in entity.items() if key != "text"} for entity in found]


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 150
    kinds = {entity["type"] for case in CASES for entity in case["entities"]}
    assert kinds == {"phone", "date", "time", "datetime", "amount", "reference"}


@pytest.mark.parametrize("case", CASES, ids=[case["text"][:40] for case in CASES])
def test_entities(case):
    assert without_text(entities(case["text"], now=NOW)) == case["entities"]


@pytest.mark.parametrize("case", CASES, ids=[case["text"][:40] for case in CASES])
def test_each_entity_names_the_words_it_was_read_from(case):
    for entity in entities(case["text"], now=NOW):
        assert entity["text"].strip() and entity["text"].lower() in case["text"].lower().replace(
            "doppel-null", "null null").replace("doppelnull", "null null").replace("doppel-eins", "eins eins")


@pytest.mark.parametrize("word, value", [
    ("null", 0), ("zwo", 2), ("sechzehn", 16), ("siebzehn", 17), ("dreiundzwanzig", 23), ("hundert", 100),
    ("einhundertzwölf", 112), ("zweihunderteinundzwanzig", 221), ("tausend", 1000),
    ("zweitausendsechsundzwanzig", 2026), ("neunzehnhundertneunundneunzig", 1999), ("zwei-und-zwanzig", 22),
    ("Termin", None), ("und", None), ("", None),
])
def test_number_words(word, value):
    assert number_of(word) == value


@pytest.mark.parametrize("word, value", [
    ("ersten", 1), ("dritten", 3), ("siebten", 7), ("achten", 8), ("zwölfter", 12), ("neunzehnten", 19),
    ("zwanzigsten", 20), ("einunddreißigsten", 31), ("Westen", None),
])
def test_ordinal_words(word, value):
    assert ordinal_of(word) == value


def test_relative_days_resolve_on_the_given_clock_across_the_date_line():
    late = datetime.datetime(2026, 11, 25, 23, 30, tzinfo=BERLIN)
    assert without_text(entities("morgen um halb drei", now=late)) == [
        {"type": "datetime", "value": "2026-11-26T14:30:00+01:00"}]
    # The same instant in UTC is still the 25th, but the tenant's tomorrow is the 26th.
    assert entities("morgen", now=late.astimezone(zoneinfo.ZoneInfo("Asia/Tokyo")))[0]["value"] == "2026-11-27"


def test_a_date_after_the_change_to_summer_time_has_its_summer_offset():
    found = entities("Am zwanzigsten Mai um halb vier", now=NOW)
    assert found[0]["value"] == "2027-05-20T15:30:00+02:00"


def test_no_entities_in_plain_conversation():
    assert entities("Guten Morgen, ich hätte gern einen Rückruf.", now=NOW) == []
    assert entities("", now=NOW) == []


def test_the_documented_kinds_are_the_ones_read():
    from speech_app.serializers import ENTITY_TYPES, REFERENCE_KINDS

    found = [entity for case in CASES for entity in case["entities"]]
    assert {entity["type"] for entity in found} == set(ENTITY_TYPES)
    assert {entity["kind"] for entity in found if "kind" in entity} <= set(REFERENCE_KINDS)
