"""Contacts of a campaign: JSON rows or a CSV upload as Excel writes it (Windows-1252
with ';', UTF-8 with a BOM), every bad row reported with its row number and reason,
duplicates folded, the blocklist and the consent rules of marketing applied."""
import csv
import io
import os

import pytest

from campaigns_app.models import CampaignContact
from campaigns_app.services import blocklist_add
from tests.conftest import error_of

pytestmark = pytest.mark.django_db

CONSENT = {"consentSource": "Webformular", "consentAt": "2026-10-01T10:00:00+02:00",
           "consentText": "Ja, rufen Sie mich an."}


@pytest.fixture
def campaign_of(api_a, number):
    def make(purpose="service"):
        response = api_a.post("/v2/campaigns", {"name": "Liste", "purpose": purpose}, format="json")
        assert response.status_code == 201, response.content
        return response.json()["id"]
    return make


def upload(api, campaign, rows, *, encoding="cp1252", delimiter=";", bom=False, filename="kontakte.csv"):
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter).writerows(rows)
    data = (b"\xef\xbb\xbf" if bom else b"") + buffer.getvalue().encode(encoding)
    return send_file(api, campaign, data, filename=filename)


def send_file(api, campaign, data, filename="kontakte.csv"):
    return api.post(f"/v2/campaigns/{campaign}/contacts",
                    {"file": io.BytesIO(data) if not hasattr(data, "read") else data}, format="multipart")


EXCEL_ROWS = [
    ["phone", "name", "consentSource", "consentAt", "consentText"],
    ["0176 11122233", "Jürgen Müller", "Webformular", "2026-10-01T10:00:00+02:00", "Ja, rufen Sie mich an."],
    ["0176 44455566", "Björn Weiß", "", "", ""],
    ["keine Nummer", "Kaputt", "", "", ""],
    ["0176 11122233", "Doppelt", "Webformular", "2026-10-01T10:00:00+02:00", "Ja"],
]


def test_an_excel_csv_in_windows_1252_with_semicolons_is_read(api_a, campaign_of):
    campaign = campaign_of("marketing")

    response = upload(api_a, campaign, EXCEL_ROWS)

    assert response.status_code == 200, response.content
    report = response.json()
    assert report["file"] == {"encoding": "cp1252", "separator": ";", "rows": 4}
    assert (report["added"], report["duplicates"], report["skippedNoConsent"], report["invalid"]) == (1, 1, 1, 1)
    assert report["errors"] == [{"row": 4, "field": "phone", "reason": "A phone number contains no letters."}]
    assert report["skipped"][0]["row"] == 3 and report["skipped"][0]["outcome"] == "skipped_no_consent"
    assert "consentSource, consentAt, consentText" in report["skipped"][0]["reason"]
    assert report["folded"] == [{"row": 5, "phone": "+4917611122233", "sameAsRow": 2, "reason": "Same number as row 2."}]
    jurgen = CampaignContact.objects.get(campaign_id=campaign, phone="+4917611122233")
    assert jurgen.name == "Jürgen Müller" and jurgen.status == "pending"
    assert jurgen.consent_source == "Webformular" and jurgen.consent_at.isoformat() == "2026-10-01T08:00:00+00:00"
    assert report["counts"]["total"] == 2 and report["counts"]["skipped_no_consent"] == 1


@pytest.mark.parametrize("encoding, bom, delimiter", [("utf-8", True, ";"), ("utf-8", False, ","),
                                                      ("cp1252", False, ",")])
def test_utf8_with_and_without_bom_and_commas_are_read_alike(api_a, campaign_of, encoding, bom, delimiter):
    campaign = campaign_of("service")

    report = upload(api_a, campaign, EXCEL_ROWS, encoding=encoding, bom=bom, delimiter=delimiter).json()

    assert report["added"] == 2 and report["file"]["separator"] == delimiter
    assert CampaignContact.objects.filter(campaign_id=campaign, name="Björn Weiß").exists()


def test_a_utf16_unicode_text_export_with_tabs_is_read(api_a, campaign_of):
    campaign = campaign_of("service")
    data = "phone\tname\r\n0176 11122233\tJürgen\r\n".encode("utf-16")

    report = send_file(api_a, campaign, data).json()

    assert report["added"] == 1 and report["file"] == {"encoding": "utf-16", "separator": "\t", "rows": 1}


def test_german_headers_and_extra_columns_become_variables(api_a, campaign_of):
    campaign = campaign_of("service")
    rows = [["Telefonnummer", "Name", "Vorname", "Termin Datum"], ["030 901820", "Weiß", "Björn", "03.12.2026"]]

    assert upload(api_a, campaign, rows).json()["added"] == 1

    contact = CampaignContact.objects.get(campaign_id=campaign)
    assert contact.phone == "+4930901820" and contact.variables == {"Vorname": "Björn", "Termin_Datum": "03.12.2026"}


def test_a_table_without_a_phone_column_is_refused_clearly(api_a, campaign_of):
    response = upload(api_a, campaign_of(), [["Name", "Ort"], ["Müller", "Passau"]])

    assert response.status_code == 400 and "no phone column" in error_of(response)["details"]["file"][0]


@pytest.mark.parametrize("data, says", [
    (os.urandom(4096) + b"\x00", "text"),
    (b"PK\x03\x04" + os.urandom(100), "save it as CSV"),
    (b"", "empty"),
])
def test_garbage_is_refused_with_what_to_send(api_a, campaign_of, data, says):
    response = send_file(api_a, campaign_of(), data)

    assert response.status_code == 400 and error_of(response)["code"] == "csv_unreadable"
    assert says in error_of(response)["message"]


@pytest.mark.slow
def test_ten_megabytes_of_garbage_are_refused_without_reading_them_as_contacts(api_a, campaign_of):
    campaign = campaign_of()
    just_over = os.urandom(10 * 1024 * 1024 + 1)

    too_big = send_file(api_a, campaign, just_over)
    at_the_limit = send_file(api_a, campaign, just_over[:10 * 1024 * 1024])

    assert too_big.status_code == 413 and error_of(too_big)["details"]["maxBytes"] == 10 * 1024 * 1024
    assert at_the_limit.status_code == 400 and error_of(at_the_limit)["code"] == "csv_unreadable"
    assert not CampaignContact.objects.exists()


def test_the_upload_needs_its_file_field(api_a, campaign_of):
    response = api_a.post(f"/v2/campaigns/{campaign_of()}/contacts", {"datei": io.BytesIO(b"phone\n")},
                          format="multipart")

    assert response.status_code == 400 and "file" in error_of(response)["details"]


def test_a_csv_body_is_taken_as_it_is(api_a, campaign_of):
    campaign = campaign_of()
    response = api_a.post(f"/v2/campaigns/{campaign}/contacts", "phone;name\r\n0176 11122233;Jürgen\r\n".encode(
        "cp1252"), content_type="text/csv")

    assert response.status_code == 200 and response.json()["added"] == 1


def test_json_rows_report_bad_rows_by_position(api_a, campaign_of):
    campaign = campaign_of("marketing")
    rows = [{"phone": "0176 11122233", **CONSENT}, {"phone": "12"}, {"phone": "030 901820", "b2b": True},
            {"phone": "0176 44455566", "consentAt": "2999-01-01"}, {"phone": "0176 55566677", "age": 3}]

    report = api_a.post(f"/v2/campaigns/{campaign}/contacts", {"contacts": rows}, format="json").json()

    assert report["added"] == 2
    assert [(e["row"], e["field"]) for e in report["errors"]] == [(2, "phone"), (4, "consentAt"), (5, "age")]


def test_marketing_needs_all_three_consent_fields_unless_b2b_and_service_needs_none(api_a, campaign_of):
    marketing, service = campaign_of("marketing"), campaign_of("service")
    rows = [{"phone": "0176 11122233", **CONSENT}, {"phone": "0176 22233344", **{**CONSENT, "consentText": ""}},
            {"phone": "0176 33344455", "b2b": True}, {"phone": "0176 44455566"}]

    for campaign, added, skipped in ((marketing, 2, 2), (service, 4, 0)):
        report = api_a.post(f"/v2/campaigns/{campaign}/contacts", {"contacts": rows}, format="json").json()
        assert (report["added"], report["skippedNoConsent"]) == (added, skipped), campaign
    missing_text = CampaignContact.objects.get(campaign_id=marketing, phone="+4917622233344")
    assert missing_text.status == "done" and missing_text.outcome == "skipped_no_consent"


def test_the_blocklist_skips_numbers_and_a_second_upload_folds_known_ones(api_a, campaign_of, bavarian):
    campaign = campaign_of()
    blocklist_add(tenant=bavarian, phone="0176 44455566")
    rows = [{"phone": "0176 11122233"}, {"phone": "+49 176 44455566"}]

    first = api_a.post(f"/v2/campaigns/{campaign}/contacts", {"contacts": rows}, format="json").json()
    second = api_a.post(f"/v2/campaigns/{campaign}/contacts", {"contacts": rows}, format="json").json()

    assert (first["added"], first["skippedBlocklist"]) == (1, 1)
    assert (second["added"], second["duplicates"]) == (0, 2)
    assert second["folded"][0]["reason"] == "Already a contact of the campaign."


def test_a_campaign_holds_at_most_50000_contacts(api_a, campaign_of, monkeypatch):
    from campaigns_app.services import contacts

    monkeypatch.setattr(contacts, "MAX_CONTACTS_PER_CAMPAIGN", 3)
    campaign = campaign_of()
    rows = [{"phone": f"0176 1112223{i}"} for i in range(4)]

    response = api_a.post(f"/v2/campaigns/{campaign}/contacts", {"contacts": rows}, format="json")

    assert response.status_code == 400 and error_of(response)["code"] == "too_many_contacts"
    assert not CampaignContact.objects.exists()


def test_a_finished_campaign_takes_no_contacts(api_a, campaign_of):
    campaign = campaign_of()
    api_a.post(f"/v2/campaigns/{campaign}/cancel")

    response = api_a.post(f"/v2/campaigns/{campaign}/contacts", {"contacts": [{"phone": "0176 11122233"}]},
                          format="json")

    assert response.status_code == 409 and error_of(response)["code"] == "campaign_finished"


def test_contacts_are_listed_with_their_state(api_a, campaign_of):
    campaign = campaign_of("marketing")
    api_a.post(f"/v2/campaigns/{campaign}/contacts", {"contacts": [{"phone": "0176 11122233", **CONSENT},
                                                                   {"phone": "0176 44455566"}]}, format="json")

    listed = api_a.get(f"/v2/campaigns/{campaign}/contacts").json()
    skipped = api_a.get(f"/v2/campaigns/{campaign}/contacts?outcome=skipped_no_consent").json()

    assert len(listed["contacts"]) == 2 and listed["next"] is None
    assert [c["phone"] for c in skipped["contacts"]] == ["+4917644455566"]
    assert skipped["contacts"][0]["status"] == "done" and skipped["contacts"][0]["attemptList"] == []


def test_the_acceptance_probes_round_trip(api_a, number, assistant):
    """As an outside client does it: a marketing draft, a hand-built multipart upload of
    an Excel CSV, then start, pause and cancel, each with an empty JSON body."""
    body = {"name": "Erinnerung", "assistant": assistant.pk, "fromNumber": number.e164, "purpose": "marketing"}
    created = api_a.post("/v2/campaigns", body, format="json")
    assert created.status_code == 201 and created.json()["state"] == "draft"
    campaign = created.json()["id"]
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=";").writerows(EXCEL_ROWS)
    boundary = "b0undary"
    payload = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"kontakte.csv\"\r\n"
               f"Content-Type: text/csv\r\n\r\n").encode() + buffer.getvalue().encode("cp1252") + \
        f"\r\n--{boundary}--\r\n".encode()

    upload = api_a.generic("POST", f"/v2/campaigns/{campaign}/contacts", payload,
                           content_type=f"multipart/form-data; boundary={boundary}")

    text = upload.content.decode()
    assert upload.status_code == 200 and '"row":4' in text.replace(" ", "") and "skipped_no_consent" in text
    for change, state in (("start", "running"), ("pause", "paused"), ("cancel", "canceled")):
        answer = api_a.post(f"/v2/campaigns/{campaign}/{change}", {}, format="json")
        assert answer.status_code == 200 and answer.json()["state"] == state
