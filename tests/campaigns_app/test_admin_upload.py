"""A campaign set up in the admin without a shell: its calling window as times per
weekday (not a JSON box), its contacts uploaded from a CSV file as Excel writes it
(`;`, a byte-order mark, Windows line ends), Vorname and Nachname making the name, the
API's import report and row errors shown."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from campaigns_app.models import Campaign, CampaignContact
from campaigns_app.services import campaign_create
from console.numbers.services import number_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(owner):
    found = Client(HTTP_ACCEPT_LANGUAGE="de")
    found.force_login(owner)
    return found


def test_the_calling_window_is_a_form_of_weekdays(client, tenant_a):
    number_create(tenant=tenant_a, e164="+4930901820")
    page = client.get("/admin/campaigns_app/campaign/add/").content.decode()
    assert 'name="window_mon_start"' in page and 'name="window_sat_end"' in page and 'name="window"' not in page
    assert "Montag von" in page and "Anrufzeiten" in page
    response = client.post("/admin/campaigns_app/campaign/add/", {
        "tenant": tenant_a.pk, "name": "Recall", "purpose": "service", "concurrency": "1", "max_attempts": "3",
        "retry_after_min": "60", "voicemail_touchpoint": "voicemail.callback", "from_number": "030 901820",
        "voicemail": "hangup",
        "window_mon_start": "09:00", "window_mon_end": "12:30", "window_thu_start": "14:00", "window_thu_end": "18:00"})
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Campaign.objects.get().window == {"mon": {"start": "09:00", "end": "12:30"},
                                             "thu": {"start": "14:00", "end": "18:00"}}
    half = client.post("/admin/campaigns_app/campaign/add/", {
        "tenant": tenant_a.pk, "name": "Halb", "purpose": "service", "concurrency": "1", "max_attempts": "3",
        "retry_after_min": "60", "voicemail_touchpoint": "voicemail.callback", "from_number": "030 901820",
        "voicemail": "hangup", "window_tue_start": "09:00"})
    assert half.status_code == 200 and "beide Uhrzeiten" in half.content.decode()


def test_contacts_are_uploaded_from_an_excel_csv(client, tenant_a):
    number_create(tenant=tenant_a, e164="+4930901820")
    campaign = campaign_create(tenant=tenant_a, name="Recall", purpose="service")
    change = client.get(f"/admin/campaigns_app/campaign/{campaign.pk}/change/").content.decode()
    upload_url = f"/admin/campaigns_app/campaign/{campaign.pk}/contacts/upload/"
    assert upload_url in change and "Kontakte hochladen (CSV)" in change
    excel = ("\ufeffVorname;Nachname;Telefon;Termin\r\n"
             "Anna;Müller;0171 2345678;Montag\r\n"
             "Jörg;Weiß;keine Nummer;Dienstag\r\n"
             "Eva;Schmidt;+49 171 9876543;Mittwoch\r\n").encode("utf-8")
    page = client.post(upload_url, {"file": SimpleUploadedFile("kontakte.csv", excel, "text/csv")}).content.decode()
    assert "2 von 3 Zeilen als Kontakte übernommen" in page
    assert 'id="upload-errors"' in page and "<td>3</td><td>phone</td>" in page  # the bad row, by its line
    names = dict(CampaignContact.objects.filter(campaign=campaign).values_list("phone", "name"))
    assert names == {"+491712345678": "Anna Müller", "+491719876543": "Eva Schmidt"}
    contact = CampaignContact.objects.get(phone="+491712345678")
    assert contact.variables["Termin"] == "Montag"
    # Windows-1252 (Excel's "CSV (Trennzeichen-getrennt)") reads the same.
    legacy = "Vorname;Nachname;Telefon\r\nJürgen;Groß;0171 5555555\r\n".encode("cp1252")
    client.post(upload_url, {"file": SimpleUploadedFile("alt.csv", legacy, "text/csv")})
    assert CampaignContact.objects.get(phone="+491715555555").name == "Jürgen Groß"
