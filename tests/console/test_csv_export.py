"""Every CSV the console hands out (the admin lists' *Als CSV exportieren*): no cell
runs as a formula in a spreadsheet, numbers stay readable, and query parameters the
list cannot apply are treated as the list treats them, never a 500."""
import csv
import datetime as dt
import io
import re

import pytest
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.test import Client
from django.utils import timezone

from calls_app.models import Call, Carrier
from campaigns_app.models import Campaign, CampaignContact
from console.admin_export import CsvExportMixin
from console.csv_export import csv_stream, neutralise
from leads_app.models import Lead

# The admin lists with an export; a new one fails test_every_export_is_covered until added.
EXPORTS = {
    Lead: "/admin/leads_app/lead/",
    Call: "/admin/calls_app/call/",
    CampaignContact: "/admin/campaigns_app/campaigncontact/",
}


def read_csv(response):
    body = b"".join(response.streaming_content).decode()
    assert body.startswith("\ufeff")
    return list(csv.reader(io.StringIO(body.lstrip("\ufeff"))))


def logged_in(user):
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def listed_ids(client, changelist, query):
    page = client.get(changelist, query)
    assert page.status_code == 200
    return [unquote(pk) for pk in re.findall(rf'{changelist}([^/"]+)/change/', page.content.decode())]


# --- the writer -----------------------------------------------------------------------

@pytest.mark.parametrize("value", ["=1+2", "+49301234567", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1",
                                   "＝1+2", "=HYPERLINK(\"http://evil.example\",\"klick\")"])
def test_a_cell_that_would_start_a_formula_gets_an_apostrophe(value):
    assert neutralise(value) == "'" + value


@pytest.mark.parametrize("value", ["Termin", "'=1", " =1", "2026-01-01T10:00:00+01:00", "", "a=b", "lead_abc"])
def test_other_text_is_written_as_it_is(value):
    assert neutralise(value) == value


@pytest.mark.parametrize("value", [-3, 0, 42, 1.5, True])
def test_numbers_are_not_text_and_stay_numbers(value):
    assert neutralise(value) is value


def test_an_empty_value_is_an_empty_cell():
    assert neutralise(None) == ""


def test_a_quote_or_separator_cannot_break_out_of_its_cell():
    text = "".join(csv_stream(["a", "b"], [['x",=1+2;"', "-1\n=2"]]))
    lines = text.lstrip("\ufeff")
    assert lines.splitlines()[0] == '"a","b"'
    assert list(csv.reader(io.StringIO(lines)))[1] == ["x\",=1+2;\"", "'-1\n=2"]


# --- the admin exports ----------------------------------------------------------------

def test_every_export_is_covered():
    with_export = {model for model, model_admin in admin.site._registry.items()
                   if isinstance(model_admin, CsvExportMixin)}
    assert with_export == set(EXPORTS)


@pytest.fixture
def hostile(tenant_a):
    carrier = Carrier.objects.create(id="sim-csv", secret_nonce="n")
    call = Call.objects.create(tenant=tenant_a, carrier=carrier, direction="inbound", from_e164="+4930901820",
                               to_e164="+493055501234", status="completed", seconds=42)
    lead = Lead.objects.create(tenant=tenant_a, kind="callback", phone="+491711234567",
                               preferred_at="-2+3+cmd|'/C'!A0",
                               notes="=HYPERLINK(\"http://evil.example\";\"Rückruf\")")
    campaign = Campaign.objects.create(tenant=tenant_a, name="@Kampagne", from_number="+493055501234", window={})
    CampaignContact.objects.create(tenant=tenant_a, campaign=campaign, phone="+491711234567", due_at=timezone.now(),
                                   name="=HYPERLINK(\"http://evil.example\";\"klick\")", consent_text="-Ja")
    return {"call": call, "lead": lead}


def test_the_lead_export_neutralises_formulas_and_keeps_the_number_readable(owner, hostile):
    rows = read_csv(logged_in(owner).get("/admin/leads_app/lead/export.csv"))
    row = dict(zip(rows[0], rows[1], strict=True))
    assert row["id"] == hostile["lead"].pk
    assert row["phone"] == "'+491711234567"
    assert row["preferred_at"] == "'-2+3+cmd|'/C'!A0"
    assert row["notes"] == "'=HYPERLINK(\"http://evil.example\";\"Rückruf\")"
    assert row["repeats"] == "0"


def test_the_call_export_neutralises_formulas_and_keeps_the_number_readable(owner, hostile):
    rows = read_csv(logged_in(owner).get("/admin/calls_app/call/export.csv"))
    row = dict(zip(rows[0], rows[1], strict=True))
    assert row["id"] == hostile["call"].pk
    assert row["counterpart"] == "'+4930901820"
    assert row["seconds"] == "42"


def test_no_cell_of_any_export_starts_a_formula(owner, hostile):
    client = logged_in(owner)
    for changelist in EXPORTS.values():
        for row in read_csv(client.get(changelist + "export.csv")):
            for cell in row:
                assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), (changelist, cell)


@pytest.mark.parametrize("query", ["bogus=1", "created_at__gte=notadate", "created_at__year=x", "tenant=zz",
                                   "e=1&bogus=1"])
@pytest.mark.parametrize("changelist", EXPORTS.values())
def test_parameters_the_list_cannot_apply_lead_to_the_list_as_there(owner, hostile, changelist, query):
    client = logged_in(owner)
    export = client.get(f"{changelist}export.csv?{query}")
    assert export.status_code == 302
    assert export["Location"] == f"{changelist}?e=1"
    # … which is the list's own answer for those parameters (all rows, "e=1").
    shown = client.get(export["Location"])
    assert shown.status_code == 200


def test_a_forbidden_lookup_is_refused_as_on_the_list(owner, hostile):
    client = logged_in(owner)
    for path in ("/admin/leads_app/lead/", "/admin/leads_app/lead/export.csv"):
        assert client.get(path, {"tenant__memberships__user__password__startswith": "p"}).status_code == 400


@pytest.fixture
def leads(tenant_a, tenant_b):
    now = timezone.now()
    made = {}
    for key, tenant, status, age in [("new", tenant_a, "new", 1), ("old", tenant_a, "new", 40),
                                     ("done", tenant_a, "done", 1), ("foreign", tenant_b, "new", 1)]:
        lead = Lead.objects.create(tenant=tenant, kind="callback", phone="+491710000000", status=status)
        Lead.objects.filter(pk=lead.pk).update(created_at=now - dt.timedelta(days=age))
        made[key] = lead
    return made


@pytest.mark.parametrize(("query", "expected"), [
    ({}, {"new", "old", "done"}),
    ({"status__exact": "new"}, {"new", "old"}),
    ({"status__exact": "done"}, {"done"}),
    ({"created_at__gte": (timezone.now() - dt.timedelta(days=7)).isoformat()}, {"new", "done"}),
    ({"q": "+49171"}, {"new", "old", "done"}),
    ({"status__exact": "nonsense"}, set()),
])
def test_the_export_holds_exactly_the_rows_the_list_shows(owner, leads, query, expected):
    client = logged_in(owner)
    shown = listed_ids(client, "/admin/leads_app/lead/", query)
    exported = [row[0] for row in read_csv(client.get("/admin/leads_app/lead/export.csv", query))[1:]]
    assert exported == shown
    assert set(exported) == {leads[key].pk for key in expected}
