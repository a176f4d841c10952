"""The benchmark harness's arithmetic: which ceiling each share is taken against.

wrk is replaced by a list of request rates in the order the harness asks for them: the
arithmetic is what is under test here, not the machine."""
import pytest

from bench import harness

LOAD = harness.Load(threads=1, connections=8, duration=5, warmup=0, rounds=2)
ENDPOINTS = [("ceiling", "/bare", None), ("a", "/a", None), ("b", "/b", None)]


@pytest.fixture
def measured(monkeypatch):
    """Answers each wrk run with the next rate of the list it is given; records the URLs."""
    urls = []

    def use(rates):
        rates = iter(rates)

        def fake_wrk(url, load, headers=None, duration=None, script=None):
            urls.append(url)
            return harness.WrkResult(requests_per_second=next(rates), p50_ms=1.0, p99_ms=2.0, requests=1,
                                     socket_errors=0)
        monkeypatch.setattr(harness, "wrk", fake_wrk)
        monkeypatch.setattr(harness, "get_json", lambda url, headers=None: {})
        return urls
    return use


def shares(rows):
    return {row["endpoint"]: row["share of ceiling"] for row in rows}


def test_each_share_is_against_the_ceiling_at_the_start_of_its_round(measured):
    urls = measured([1000, 500, 200, 2000, 800, 600])
    rows = harness.compare("http://x", ENDPOINTS, LOAD)
    assert urls == ["http://x/bare", "http://x/a", "http://x/b"] * 2
    # a: 0.5 and 0.4, b: 0.2 and 0.3 -> medians of two.
    assert shares(rows) == {"ceiling": "100.0%", "a": "45.0%", "b": "25.0%"}


def test_a_bracketed_share_is_against_the_ceilings_just_before_and_after_it(measured):
    # Rounds: ceiling a ceiling b | ceiling a ceiling b | ceiling (closing).
    urls = measured([1000, 600, 2000, 300, 1000, 400, 1000, 500, 3000])
    rows = harness.compare("http://x", ENDPOINTS, LOAD, bracketed=True)
    assert urls == ["http://x/bare", "http://x/a", "http://x/bare", "http://x/b"] * 2 + ["http://x/bare"]
    # a: 600 / 1500 = 0.4, 400 / 1000 = 0.4; b: 300 / 1500 = 0.2, 500 / 2000 = 0.25.
    assert shares(rows) == {"ceiling": "100.0%", "a": "40.0%", "b": "22.5%"}
    ceiling = rows[0]
    assert ceiling["req/s"] == "1000" and len(ceiling["_rounds"]) == 5
