"""`GET /v2/calls` past 200: cursor pages (newest first, each call exactly once while
calls arrive), cursors bound to the tenant and the list, and the filters."""
import datetime as dt

import pytest
from django.core import signing

from calls_app.models import Call, TranscriptEntry
from console.pagination import SALT
from tests.conftest import error_of

pytestmark = pytest.mark.django_db

START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def add_calls(tenant, carrier, count, *, first=0, at=None, **fields):
    """`count` calls, one second apart from START + `first` seconds (or all at `at`)."""
    calls = Call.objects.bulk_create([
        Call(tenant=tenant, carrier=carrier, direction=fields.get("direction", "inbound"),
             from_e164=fields.get("from_e164", "+491711234567"), to_e164=fields.get("to_e164", "+493055501234"),
             status=fields.get("status", "completed"), lead_id=fields.get("lead_id", ""))
        for _ in range(count)
    ])
    for n, call in enumerate(calls):
        Call.objects.filter(pk=call.pk).update(created_at=at or START + dt.timedelta(seconds=first + n))
    return [call.pk for call in calls]


def walk(api, url, *, between=None):
    seen, pages = [], 0
    while url:
        response = api.get(url)
        assert response.status_code == 200, response.json()
        body = response.json()
        seen += [call["id"] for call in body["calls"]]
        pages += 1
        url = f"/v2/calls?limit=200&cursor={body['next']}" if body["next"] else None
        if between:
            between(pages)
    return seen, pages


def test_walking_the_pages_returns_every_call_once_newest_first_while_calls_arrive(api_a, tenant_a, carrier):
    ids = add_calls(tenant_a, carrier, 1000)
    # Ties in created_at are ordered by id: 30 calls at one moment, in the middle.
    ids += add_calls(tenant_a, carrier, 30, at=START + dt.timedelta(seconds=500, milliseconds=500))
    arrived = []

    def new_calls_arrive(page):
        arrived.extend(add_calls(tenant_a, carrier, 7, first=10_000 + page * 10))

    seen, pages = walk(api_a, "/v2/calls?limit=200", between=new_calls_arrive)
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen)) == 1030
    assert pages == 6
    expected = list(Call.objects.filter(pk__in=ids).order_by("-created_at", "-id").values_list("id", flat=True))
    assert seen == expected
    assert arrived and not set(arrived) & set(seen)


def test_a_page_takes_the_same_queries_at_any_depth(api_a, tenant_a, carrier, django_assert_num_queries):
    ids = add_calls(tenant_a, carrier, 30)
    TranscriptEntry.objects.bulk_create([TranscriptEntry(call_id=pk, role="user", text="Hallo", ts=START)
                                         for pk in ids])
    first = api_a.get("/v2/calls?limit=10").json()
    # The page of calls and their transcript lines (the credential and the tenant of
    # the first request are kept for a moment: console/credentials).
    with django_assert_num_queries(2):
        deep = api_a.get(f"/v2/calls?limit=10&cursor={first['next']}")
    with django_assert_num_queries(2):
        api_a.get(f"/v2/calls?limit=10&cursor={deep.json()['next']}")
    # The first page again: its calls are known to this process (calls_app/call_texts.py).
    with django_assert_num_queries(1):
        api_a.get("/v2/calls?limit=10")


def test_the_last_page_has_no_next_and_limit_still_defaults_to_50(api_a, tenant_a, carrier):
    add_calls(tenant_a, carrier, 60)
    first = api_a.get("/v2/calls").json()
    assert len(first["calls"]) == 50 and first["next"]
    last = api_a.get(f"/v2/calls?cursor={first['next']}").json()
    assert len(last["calls"]) == 10 and last["next"] is None


@pytest.mark.parametrize("cursor", ["abc", "", "x" * 501, "W10:1tAAAA:bad"])
def test_a_malformed_or_made_up_cursor_is_400(api_a, tenant_a, cursor):
    response = api_a.get("/v2/calls", {"cursor": cursor})
    assert response.status_code == 400
    assert "cursor" in error_of(response)["details"]


def test_a_tampered_cursor_is_400(api_a, tenant_a, carrier):
    add_calls(tenant_a, carrier, 3)
    cursor = api_a.get("/v2/calls?limit=1").json()["next"]
    payload, _, signature = cursor.partition(":")
    tampered = signing.b64_encode(signing.b64_decode(payload.encode()).replace(b"calls", b"leads")).decode()
    response = api_a.get("/v2/calls", {"cursor": f"{tampered}:{signature}"})
    assert response.status_code == 400 and error_of(response)["code"] == "invalid_cursor"


def test_a_cursor_of_another_tenant_or_list_is_400(api_a, api_b, tenant_a, tenant_b, carrier):
    add_calls(tenant_a, carrier, 3)
    add_calls(tenant_b, carrier, 3)
    foreign = api_b.get("/v2/calls?limit=1").json()["next"]
    response = api_a.get("/v2/calls", {"cursor": foreign})
    assert response.status_code == 400 and error_of(response)["code"] == "invalid_cursor"
    # A leads cursor of the same tenant, signed with the same key, is no calls cursor.
    leads_cursor = signing.dumps([tenant_a.pk, "leads", START.isoformat(), "ld_x"], salt=SALT, compress=False)
    assert api_a.get("/v2/calls", {"cursor": leads_cursor}).status_code == 400


# --- filters -------------------------------------------------------------------------

@pytest.fixture
def mixed_calls(tenant_a, tenant_b, carrier):
    """Calls differing in every filtered field; ids by name, for hand-computed answers."""
    made = {}
    specs = {
        "in_done": dict(direction="inbound", status="completed", from_e164="+4930901820", first=0),
        "in_failed": dict(direction="inbound", status="failed", from_e164="+491711234567", first=100),
        "out_done": dict(direction="outbound", status="completed", to_e164="+4930901820", first=200,
                         lead_id="ld_one"),
        "out_busy": dict(direction="outbound", status="busy", to_e164="+491711234567", first=300, lead_id="ld_two"),
        "out_failed": dict(direction="outbound", status="failed", to_e164="+4930901820", first=400,
                           lead_id="ld_one"),
    }
    for name, spec in specs.items():
        made[name] = add_calls(tenant_a, carrier, 1, **spec)[0]
    add_calls(tenant_b, carrier, 1, direction="outbound", status="failed", to_e164="+4930901820", lead_id="ld_one")
    return made


def listed(api, **query):
    response = api.get("/v2/calls", query)
    assert response.status_code == 200, response.json()
    return [call["id"] for call in response.json()["calls"]]


def names(made, *wanted):
    # Newest first: the specs above are in ascending time.
    return [made[name] for name in reversed(list(made)) if name in wanted]


def test_each_call_filter_alone(api_a, mixed_calls):
    m = mixed_calls
    assert listed(api_a, status="failed") == names(m, "in_failed", "out_failed")
    assert listed(api_a, direction="outbound") == names(m, "out_done", "out_busy", "out_failed")
    for typed in ("030 901820", "+49 30 901820", "+4930901820", "0049 30 901820"):
        assert listed(api_a, number=typed) == names(m, "in_done", "out_done", "out_failed"), typed
    assert listed(api_a, since="2026-01-01T00:03:20Z") == names(m, "out_done", "out_busy", "out_failed")
    assert listed(api_a, until="2026-01-01T01:03:20+01:00") == names(m, "in_done", "in_failed")
    assert listed(api_a, since="2026-01-02") == []
    assert listed(api_a, lead="ld_one") == names(m, "out_done", "out_failed")


def test_call_filters_combined(api_a, mixed_calls):
    m = mixed_calls
    assert listed(api_a, status="failed", direction="outbound") == names(m, "out_failed")
    assert listed(api_a, number="030 901820", status="completed") == names(m, "in_done", "out_done")
    assert listed(api_a, lead="ld_one", since="2026-01-01T00:05:00Z", status="failed") == names(m, "out_failed")
    assert listed(api_a, direction="inbound", since="2026-01-01T00:00:01Z", until="2026-01-01T00:05:00Z") == \
        names(m, "in_failed")


def test_filters_and_pages_combine(api_a, tenant_a, carrier):
    failed = add_calls(tenant_a, carrier, 25, status="failed")
    add_calls(tenant_a, carrier, 25, status="completed", first=1000)
    seen, url = [], "/v2/calls?status=failed&limit=10"
    while url:
        body = api_a.get(url).json()
        seen += [call["id"] for call in body["calls"]]
        url = f"/v2/calls?status=failed&limit=10&cursor={body['next']}" if body["next"] else None
    assert sorted(seen) == sorted(failed)


def test_a_bad_filter_value_says_how_to_fix_it(api_a, tenant_a):
    status = error_of(api_a.get("/v2/calls?status=neu"))
    assert "completed" in status["details"]["status"][0] and "no-answer" in status["details"]["status"][0]
    assert "+49 30 1234567" in error_of(api_a.get("/v2/calls?number=12"))["details"]["number"][0]
    assert "ISO 8601" in error_of(api_a.get("/v2/calls?since=yesterday"))["details"]["since"][0]
    assert "later" in error_of(api_a.get("/v2/calls?since=2026-02-01&until=2026-01-01"))["details"]["until"][0]


def test_an_unknown_query_parameter_is_400_naming_it_and_the_accepted_ones(api_a, tenant_a):
    response = api_a.get("/v2/calls?stauts=failed&offset=200")
    error = error_of(response)
    assert response.status_code == 400
    assert set(error["details"]) == {"offset", "stauts"}
    assert "offset, stauts" in error["message"]
    for accepted in ("limit", "cursor", "status", "direction", "number", "since", "until", "lead"):
        assert accepted in error["message"]
