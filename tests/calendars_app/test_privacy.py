"""A caller's appointments are in the export of their number and reached by its erasure;
another caller's stay."""
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from calendars_app.models import Appointment, Calendar
from privacy_app import services as privacy
from privacy_app.models import Export

pytestmark = pytest.mark.django_db

AT = datetime(2026, 12, 1, 10, 0, tzinfo=ZoneInfo("Europe/Berlin"))


@pytest.fixture
def appointments(tenant_a):
    calendar = Calendar.objects.create(tenant=tenant_a, name="Praxis", kind="caldav", url="https://dav.example/p/")
    mine = Appointment.objects.create(tenant=tenant_a, calendar=calendar, assistant_id="as_x", type_name="Erstgespräch",
                                      starts_at=AT, ends_at=AT, caller_e164="+4917612345678", caller_name="Lehmann",
                                      call_id="cl_1")
    other = Appointment.objects.create(tenant=tenant_a, calendar=calendar, assistant_id="as_x", type_name="Erstgespräch",
                                       starts_at=AT, ends_at=AT, caller_e164="+4915123456789", caller_name="Neumann")
    return mine, other


def test_the_export_of_a_number_has_its_appointments(tenant_a, appointments):
    mine, _other = appointments
    export = privacy.export_create(tenant=tenant_a, e164="+4917612345678", actor="user:test")
    document = Export.objects.get(pk=export.pk).document
    assert [(row["id"], row["name"], row["phone"], row["type"], row["call"]) for row in document["appointments"]] == [
        (mine.pk, "Lehmann", "+4917612345678", "Erstgespräch", "cl_1")]


def test_the_erasure_of_a_number_deletes_its_appointments_only(tenant_a, appointments):
    mine, other = appointments
    receipt = privacy.erasure_create(tenant=tenant_a, e164="+4917612345678", actor="user:test")
    assert receipt.counts["appointments"] == 1
    assert list(Appointment.objects.values_list("pk", flat=True)) == [other.pk]
