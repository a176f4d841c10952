"""/v2/campaigns: a draft with the defaults, changes of state (409 where the state does
not allow them), and the checks against the tenant's numbers, assistants and limit."""
import pytest

from campaigns_app.models import Campaign
from tests.campaigns_app.conftest import NUMBER
from tests.conftest import error_of

pytestmark = pytest.mark.django_db


def create(api, **body):
    body.setdefault("name", "Erinnerung")
    body.setdefault("purpose", "service")
    return api.post("/v2/campaigns", body, format="json")


def test_a_new_campaign_is_a_draft_with_the_defaults(api_a, number, assistant):
    response = create(api_a, assistant=assistant.pk, fromNumber="030 55501234")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"].startswith("cp_") and body["state"] == "draft"
    assert body["fromNumber"] == NUMBER and body["assistant"] == assistant.pk
    assert body["window"] == {**{day: {"start": "09:00", "end": "20:00"} for day in ("mon", "tue", "wed", "thu",
                                                                                     "fri")},
                              "sat": {"start": "10:00", "end": "16:00"}}
    assert (body["concurrency"], body["maxAttempts"], body["retryAfterMin"], body["voicemail"]) == (1, 3, 120,
                                                                                                    "hangup")
    assert body["timeZone"] == "Europe/Berlin" and body["counts"]["total"] == 0 and body["progress"] == 0
    one, listed = api_a.get(f"/v2/campaigns/{body['id']}").json(), api_a.get("/v2/campaigns").json()["campaigns"][0]
    for answer in (one, listed, body):
        answer.pop("nextCallAt")  # when the window opens next: now, if it is open
    assert one == listed == body


def test_the_caller_number_must_be_one_of_the_tenants(api_a, number):
    response = create(api_a, fromNumber="+4940555099999")

    assert response.status_code == 400 and "fromNumber" in error_of(response)["details"]


def test_a_tenant_without_numbers_gets_told_to_add_one(api_a):
    response = create(api_a)

    assert response.status_code == 400
    assert "POST /v2/numbers" in error_of(response)["details"]["fromNumber"][0]


def test_concurrency_is_bounded_by_the_tenants_limit(api_a, number, bavarian):
    bavarian.campaign_concurrency_limit = 3
    bavarian.save()

    assert create(api_a, concurrency=3).status_code == 201
    response = create(api_a, concurrency=4)
    assert response.status_code == 400 and "At most 3" in error_of(response)["details"]["concurrency"][0]


@pytest.mark.parametrize("window, problem", [
    ({"sun": {"start": "10:00", "end": "12:00"}}, "Sundays"),
    ({"mon": {"start": "20:00", "end": "09:00"}}, "after the start"),
    ({"mon": {"start": "9 Uhr", "end": "12:00"}}, "HH:MM"),
    ({"someday": ["09:00", "12:00"]}, "not a weekday"),
    ({}, "names no day"),
])
def test_bad_windows_are_refused_with_the_fix(api_a, number, window, problem):
    response = create(api_a, window=window)

    assert response.status_code == 400 and problem in error_of(response)["details"]["window"][0]


def test_windows_may_be_written_in_short_forms(api_a, number):
    response = create(api_a, window={"Mo": "08:30-12:00", "saturday": ["10:00", "13:00"], "sun": None})

    assert response.json()["window"] == {"mon": {"start": "08:30", "end": "12:00"},
                                         "sat": {"start": "10:00", "end": "13:00"}}


def test_leave_message_speaks_the_campaign_voicemail_touchpoint_by_default(api_a, number):
    body = create(api_a, voicemail="leave_message").json()
    assert body["voicemailTouchpoint"] == "campaign.voicemail"

    response = create(api_a, voicemail="leave_message", voicemailTouchpoint="nope.nothing")
    assert response.status_code == 400 and "voicemailTouchpoint" in error_of(response)["details"]


def test_each_change_answers_the_campaign_and_a_disallowed_one_is_409(api_a, number):
    campaign = create(api_a).json()["id"]

    def post(change):
        return api_a.post(f"/v2/campaigns/{campaign}/{change}")

    for change, state in (("start", "running"), ("pause", "paused"), ("resume", "running"), ("pause", "paused"),
                          ("cancel", "canceled")):
        response = post(change)
        assert response.status_code == 200 and response.json()["state"] == state, (change, response.content)
    for change in ("start", "pause", "resume", "cancel"):
        response = post(change)
        error = error_of(response)
        assert response.status_code == 409 and error["code"] == "campaign_state_conflict"
        assert error["details"]["state"] == "canceled"


def test_only_a_running_campaign_pauses_and_only_a_draft_starts(api_a, number):
    campaign = create(api_a).json()["id"]

    assert api_a.post(f"/v2/campaigns/{campaign}/pause").status_code == 409
    assert api_a.post(f"/v2/campaigns/{campaign}/resume").status_code == 409
    assert api_a.post(f"/v2/campaigns/{campaign}/start").status_code == 200
    assert api_a.post(f"/v2/campaigns/{campaign}/start").status_code == 409


def test_a_paused_campaign_says_who_paused_it(api_a, number):
    campaign = create(api_a).json()["id"]
    api_a.post(f"/v2/campaigns/{campaign}/start")

    body = api_a.post(f"/v2/campaigns/{campaign}/pause").json()

    assert body["pausedReason"] == "operator"
    assert api_a.post(f"/v2/campaigns/{campaign}/resume").json()["pausedReason"] is None


def test_changes_and_deletion_follow_the_state(api_a, number):
    campaign = create(api_a, purpose="marketing").json()["id"]
    assert api_a.patch(f"/v2/campaigns/{campaign}", {"name": "Neu", "concurrency": 2}, format="json").json()[
        "name"] == "Neu"
    api_a.post(f"/v2/campaigns/{campaign}/start")

    response = api_a.patch(f"/v2/campaigns/{campaign}", {"purpose": "service"}, format="json")
    assert response.status_code == 409
    assert api_a.delete(f"/v2/campaigns/{campaign}").status_code == 409
    api_a.post(f"/v2/campaigns/{campaign}/cancel")
    assert api_a.patch(f"/v2/campaigns/{campaign}", {"name": "x"}, format="json").status_code == 409

    draft = create(api_a).json()["id"]
    assert api_a.delete(f"/v2/campaigns/{draft}").status_code == 204
    assert not Campaign.objects.filter(pk=draft).exists()


def test_unknown_fields_are_named(api_a, number):
    response = create(api_a, maxAtempts=2)

    assert response.status_code == 400 and "maxAtempts" in error_of(response)["details"]


def test_the_list_is_paged_by_cursor_newest_first_like_every_list(api_a, api_b, number):
    made = [create(api_a, name=f"Kampagne {index}", fromNumber=NUMBER).json()["id"] for index in range(5)]
    pages, cursor = [], None
    while True:
        body = api_a.get("/v2/campaigns", {"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
        pages.append([campaign["id"] for campaign in body["campaigns"]])
        cursor = body["next"]
        if cursor is None:
            break
    assert [len(page) for page in pages] == [2, 2, 1]
    assert [pk for page in pages for pk in page] == list(reversed(made))
    whole = api_a.get("/v2/campaigns").json()
    assert len(whole["campaigns"]) == 5 and whole["next"] is None
    # A cursor is its tenant's and its list's: another tenant's use of it is refused.
    first = api_a.get("/v2/campaigns", {"limit": 2}).json()["next"]
    assert error_of(api_b.get("/v2/campaigns", {"cursor": first}))["code"] == "invalid_cursor"
    assert error_of(api_a.get("/v2/campaigns", {"limit": "x"}))["code"] == "validation_error"
