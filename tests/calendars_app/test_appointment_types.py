"""An assistant's appointment types: checked under their paths, their calendar one of
the tenant's, their hours in any of the accepted spellings stored in one, and carried
by the published versions like every field."""
import pytest

from calendars_app.models import Calendar
from console.assistants.models import Assistant
from console.assistants.selectors import assistant_answering
from console.assistants.services import assistant_publish
from tests.conftest import error_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def calendar(tenant_a):
    return Calendar.objects.create(tenant=tenant_a, name="Praxis", kind="caldav", url="https://dav.example/p/")


@pytest.fixture
def assistant(tenant_a):
    return Assistant.objects.create(tenant=tenant_a, name="Praxis")


def patch(api, assistant, types):
    return api.patch(f"/v2/assistants/{assistant.pk}", {"appointmentTypes": types}, format="json")


def test_hours_in_any_spelling_are_stored_in_one(api_a, assistant, calendar):
    response = patch(api_a, assistant, [{"name": " Erst  gespräch ", "durationMinutes": 45, "calendar": calendar.pk,
                                         "hours": {"Montag": "08:00-12:00", "tue": ["09:00", "11:00"],
                                                   "wed": [{"start": "08:00", "end": "10:00"},
                                                           {"start": "09:30", "end": "12:00"}],
                                                   "thu": None},
                                         "maxPerDay": 4}])
    assert response.status_code == 200, response.content
    assert response.json()["appointmentTypes"] == [{
        "name": "Erst gespräch", "durationMinutes": 45, "bufferBeforeMinutes": 0, "bufferAfterMinutes": 0,
        "calendar": calendar.pk, "hours": {"mon": [{"start": "08:00", "end": "12:00"}],
                                           "tue": [{"start": "09:00", "end": "11:00"}],
                                           "wed": [{"start": "08:00", "end": "12:00"}]},
        "minNoticeMinutes": 120, "maxDaysAhead": 60, "maxPerDay": 4, "holidaysClosed": True}]


def test_every_problem_is_named_by_its_path(api_a, api_b, assistant, calendar):
    response = patch(api_a, assistant, [
        {"name": "A", "durationMinutes": 3, "calendar": calendar.pk, "hours": {"mon": "12:00-09:00"}, "colour": 1},
        {"name": "a", "durationMinutes": 30, "calendar": "cal_fremd"}])
    details = error_of(response)["details"]
    assert set(details) == {"appointmentTypes[0].durationMinutes", "appointmentTypes[0].hours.mon",
                            "appointmentTypes[0].colour", "appointmentTypes[1].name",
                            "appointmentTypes[1].calendar"}
    assert Assistant.objects.get(pk=assistant.pk).appointment_types == []


def test_a_published_version_keeps_its_appointment_types(api_a, assistant, calendar):
    first = [{"name": "Erstgespräch", "durationMinutes": 30, "calendar": calendar.pk}]
    assert patch(api_a, assistant, first).status_code == 200
    assistant.refresh_from_db()
    assistant_publish(assistant=assistant, actor="user:test")
    assert patch(api_a, assistant, [{**first[0], "durationMinutes": 60}]).status_code == 200
    answering = assistant_answering(assistant=Assistant.objects.get(pk=assistant.pk))
    assert answering.appointment_types[0]["durationMinutes"] == 30
    changes = api_a.get(f"/v2/assistants/{assistant.pk}/versions").json()["draftChanges"]
    assert [change["field"] for change in changes] == ["appointmentTypes"]
