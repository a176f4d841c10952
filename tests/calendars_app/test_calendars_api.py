"""`/v2/calendars` against a real CalDAV server (Radicale on loopback): connected with a
check on save, the app password sealed and never shown, a German error naming what is
wrong, the outbound guard's one admission rule, tenant scoping."""
import pytest
from django.test import override_settings

from calendars_app.models import Calendar
from console.assistants.models import Assistant
from tests.conftest import error_of

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def body(dav, url, **more):
    return {"name": "Praxis", "kind": "caldav", "url": url, "username": dav.user, "password": dav.password, **more}


def test_a_caldav_calendar_is_connected_after_its_check(api_a, dav, calendar_url):
    response = api_a.post("/v2/calendars", body(dav, calendar_url), format="json")
    assert response.status_code == 201, response.content
    shown = response.json()
    assert shown["id"].startswith("cal_") and shown["kind"] == "caldav" and shown["checkedAt"]
    assert shown["connection"] == {"url": calendar_url, "username": dav.user}
    assert shown["secretsSet"] == ["password"]
    assert dav.password not in response.content.decode()
    row = Calendar.objects.get(pk=shown["id"])
    assert row.secrets_sealed and dav.password not in str(list(Calendar.objects.values()))
    assert api_a.get("/v2/calendars").json() == {"calendars": [shown]}


@pytest.mark.parametrize(("change", "reason", "words"), [
    ({"password": "falsch"}, "unauthorized", "App-Passwort ist falsch"),
    ({"url": "/praxis/gibt-es-nicht/"}, "not_found", "kein Kalender gefunden"),
])
def test_a_calendar_that_fails_its_check_is_refused_in_german(api_a, dav, calendar_url, change, reason, words):
    data = body(dav, calendar_url)
    if "url" in change:
        change = {"url": dav.base.rstrip("/") + change["url"]}
    response = api_a.post("/v2/calendars", {**data, **change}, format="json")
    error = error_of(response)
    assert response.status_code == 400 and error["code"] == "calendar_check_failed"
    assert error["details"] == {"reason": reason} and words in error["message"]
    assert not Calendar.objects.exists()


def test_an_unreachable_server_is_said_so(api_a, dav):
    from tests.live_service import free_port

    response = api_a.post("/v2/calendars", body(dav, f"http://127.0.0.1:{free_port()}/x/"), format="json")
    error = error_of(response)
    assert error["code"] == "calendar_check_failed" and error["details"] == {"reason": "unreachable"}
    assert "nicht erreichbar" in error["message"] or "antwortet nicht" in error["message"]


@override_settings(OUTBOUND_ALLOW_PRIVATE_TARGETS=False)
@pytest.mark.parametrize("url", ["http://127.0.0.1:5232/praxis/", "https://10.0.0.7/dav/", "https://127.1/dav/",
                                 "https://[::1]/dav/", "https://localhost/dav/"])
def test_loopback_and_private_addresses_are_refused_by_the_outbound_rule(api_a, url):
    response = api_a.post("/v2/calendars", {"name": "x", "kind": "caldav", "url": url, "username": "u",
                                            "password": "p"}, format="json")
    assert response.status_code == 400 and error_of(response)["code"] == "calendar_url_refused"


def test_other_tenants_calendars_are_404_and_one_in_use_stays(api_a, api_b, dav, calendar_url, tenant_a):
    shown = api_a.post("/v2/calendars", body(dav, calendar_url), format="json").json()
    assert api_b.get(f"/v2/calendars/{shown['id']}").status_code == 404
    assert api_b.delete(f"/v2/calendars/{shown['id']}").status_code == 404
    assistant = Assistant.objects.create(tenant=tenant_a, name="Praxis")
    patch = api_a.patch(f"/v2/assistants/{assistant.pk}", {"appointmentTypes": [
        {"name": "Erstgespräch", "durationMinutes": 30, "calendar": shown["id"]}]}, format="json")
    assert patch.status_code == 200, patch.content
    kind = patch.json()["appointmentTypes"][0]
    assert kind["hours"]["mon"] == [{"start": "09:00", "end": "17:00"}] and kind["minNoticeMinutes"] == 120
    response = api_a.delete(f"/v2/calendars/{shown['id']}")
    assert response.status_code == 409 and error_of(response)["code"] == "calendar_in_use"
    other = api_b.post("/v2/assistants", {"name": "B", "appointmentTypes": [
        {"name": "X", "durationMinutes": 30, "calendar": shown["id"]}]}, format="json")
    assert error_of(other)["details"] == {"appointmentTypes[0].calendar": [
        "Send the id of one of the tenant's calendars (cal_…, see GET /v2/calendars)."]}


def test_a_change_keeps_the_sealed_password_and_is_checked_again(api_a, dav, calendar_url):
    shown = api_a.post("/v2/calendars", body(dav, calendar_url), format="json").json()
    renamed = api_a.patch(f"/v2/calendars/{shown['id']}", {"name": "Praxis Nord"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "Praxis Nord"
    wrong = api_a.patch(f"/v2/calendars/{shown['id']}", {"password": "falsch"}, format="json")
    assert error_of(wrong)["details"] == {"reason": "unauthorized"}
    assert Calendar.objects.get(pk=shown["id"]).name == "Praxis Nord"


def test_the_tenants_cap_of_calendars_refuses_the_next_after_its_check(api_a, dav, calendar_url, settings):
    settings.TENANT_MAX_CALENDARS = 1
    assert api_a.post("/v2/calendars", body(dav, calendar_url), format="json").status_code == 201
    response = api_a.post("/v2/calendars", body(dav, calendar_url, name="Zweiter"), format="json")
    error = error_of(response)
    assert response.status_code == 409 and error["code"] == "tenant_limit_reached"
    assert error["details"]["limit"] == "calendars" and Calendar.objects.count() == 1
