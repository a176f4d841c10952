"""The labelled German scripts of ../shared/data run through the analyzer: exactly
the expected findings, no more (precision first), none missed."""
import json
from pathlib import Path

import pytest
from django.conf import settings

from scripts_app.analysis import analyze

# The shared labelled cases when the checkout sits beside shared/ (as in CI), else the
# copy kept with the tests, so that the suite stands on its own in any clone.
SHARED_CORPUS = Path(settings.BASE_DIR).parent / "shared" / "data" / "script-cases.example.json"
CORPUS = SHARED_CORPUS if SHARED_CORPUS.exists() else Path(__file__).parent / "data" / "script-cases.example.json"
CASES = json.loads(CORPUS.read_text(encoding="utf-8"))["cases"]


def matches(finding, expected):
    """The corpus's rule: same rule, the expected excerpt within the finding's excerpt
    (which is the flagged word or term, so not much longer), the same suggestion
    where one is given. `dauer` flags the whole text (CONTRACT §3)."""
    excerpt = finding["excerpt"]
    return (
        finding["rule"] == expected["rule"]
        and expected["excerpt"] in excerpt
        and (finding["rule"] == "dauer" or len(excerpt) <= 2 * len(expected["excerpt"]) + 12)
        and ("suggestion" not in expected or finding["suggestion"] == expected["suggestion"])
    )


def test_the_corpus_is_there():
    assert len(CASES) >= 6, f"expected the labelled cases at {CORPUS}"


@pytest.mark.parametrize("case", CASES, ids=[case["text"][:40] for case in CASES])
def test_corpus_case_gives_exactly_the_expected_findings(case):
    text = case["text"]
    unmatched = analyze(text, case["maxSeconds"])["findings"]
    for finding in unmatched:
        assert text[finding["offset"]:finding["offset"] + finding["length"]] == finding["excerpt"]
    missed = []
    for expected in case["expect"]:
        match = next((finding for finding in unmatched if matches(finding, expected)), None)
        if match is None:
            missed.append(expected)
        else:
            unmatched.remove(match)
    assert missed == [] and unmatched == [], f"missed {missed}, extra {unmatched}"
