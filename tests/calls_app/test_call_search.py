"""The console's call list: numbers in any format, transcript words, filters, and the
CSV export of exactly the filtered list."""
import csv
import datetime as dt
import io
import re

import pytest
from django.contrib.admin.utils import unquote
from django.test import Client

from calls_app.models import Call, Carrier, TranscriptEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def calls(tenant_a, tenant_b):
    carrier = Carrier.objects.create(id="sim-test", secret_nonce="n")
    made = {}
    for key, tenant, number, text in [
        ("termin", tenant_a, "+4930901820", "Ich möchte einen Termin vereinbaren."),
        ("preis", tenant_a, "+491711234567", "Was kostet die Reparatur?"),
        ("foreign", tenant_b, "+4930901820", "Ich brauche einen Termin."),
    ]:
        call = Call.objects.create(tenant=tenant, carrier=carrier, direction="inbound", from_e164=number,
                                   to_e164="+493055501234", status="completed", seconds=42)
        TranscriptEntry.objects.create(call=call, role="user", text=text, ts=dt.datetime.now(dt.timezone.utc))
        made[key] = call
    return made


def listed(client, query):
    """The ids of the calls the list shows for `query`."""
    page = client.get("/admin/calls_app/call/", {"q": query}).content.decode()
    return {unquote(pk) for pk in re.findall(r'/admin/calls_app/call/([^/"]+)/change/', page)}


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("typed", ["030901820", "030 901820", "+49 30 901820", "0049 30 901820", "901820"])
def test_a_number_is_found_however_it_is_typed(owner, calls, typed):
    assert listed(logged_in(owner), typed) == {calls["termin"].pk}


def test_a_transcript_word_finds_the_call(owner, calls):
    # Not the other tenant's call with the same word.
    assert listed(logged_in(owner), "Termin") == {calls["termin"].pk}
    assert listed(logged_in(owner), "Reparatur") == {calls["preis"].pk}


def test_the_csv_export_holds_the_filtered_list(owner, calls):
    response = logged_in(owner).get("/admin/calls_app/call/export.csv", {"q": "Termin"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode().lstrip("\ufeff"))))
    assert rows[0][:4] == ["id", "time", "direction", "counterpart"]
    assert [row[0] for row in rows[1:]] == [calls["termin"].pk]
    assert rows[1][3] == "'+4930901820"  # behind an apostrophe: never a formula (console/csv_export.py)


def test_the_list_links_its_export(owner, calls):
    page = logged_in(owner).get("/admin/calls_app/call/", {"q": "Termin"}).content.decode()
    assert 'href="export.csv?q=Termin"' in page

