import pytest

from scripts_app.analysis import analyze
from scripts_app.catalog import TOUCHPOINT_ID, CatalogError, catalog, parse_catalog

TOUCHPOINTS = list(catalog().values())


def test_catalog_has_at_least_twelve_touchpoints_with_dotted_ids():
    assert len(TOUCHPOINTS) >= 12
    assert all(TOUCHPOINT_ID.fullmatch(tp.id) for tp in TOUCHPOINTS)


def test_catalog_covers_the_conversation_of_a_phone_assistant():
    ids = {tp.id for tp in TOUCHPOINTS}
    for expected in ["inbound.greeting", "inbound.opening_hours", "callback.offer", "callback.confirmation",
                     "call.hold", "call.transfer", "voicemail.prompt", "keypad.fallback", "call.goodbye",
                     "callback.intro"]:
        assert expected in ids
    assert any(tp.opens_call for tp in TOUCHPOINTS) and not all(tp.opens_call for tp in TOUCHPOINTS)


@pytest.mark.parametrize("tp", TOUCHPOINTS, ids=[tp.id for tp in TOUCHPOINTS])
def test_default_text_passes_its_own_linter(tp):
    analysis = analyze(tp.text, tp.max_seconds)
    assert analysis["findings"] == []
    assert analysis["durationSec"] <= tp.max_seconds


@pytest.mark.parametrize("document, problem", [
    ({"touchpoints": []}, "no touchpoints"),
    ({"touchpoints": [{"id": "Greeting", "text": "Hallo", "maxSeconds": 5, "opensCall": True}]}, "<area>.<name>"),
    ({"touchpoints": [{"id": "a.b", "text": "Hallo", "maxSeconds": 5, "opensCall": True}] * 2}, "twice"),
    ({"touchpoints": [{"id": "a.b", "text": " ", "maxSeconds": 5, "opensCall": True}]}, "text"),
    ({"touchpoints": [{"id": "a.b", "text": "Hallo", "maxSeconds": True, "opensCall": True}]}, "maxSeconds"),
    ({"touchpoints": [{"id": "a.b", "text": "Hallo", "maxSeconds": 5, "opensCall": "yes"}]}, "opensCall"),
])
def test_a_broken_catalog_is_refused_with_the_reason(document, problem):
    with pytest.raises(CatalogError, match=problem):
        parse_catalog(document)
