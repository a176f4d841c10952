"""The script pages' play button and live findings: the text is rendered with the
disclosure and sample values (real eSpeak NG, real MP3), or analysed, and stored nowhere."""
import pytest
from django.test import Client

from scripts_app.models import ScriptOverride
from scripts_app.services import sample_variables

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("render_cache_dir")]

BASE = "/admin/scripts_app/scriptoverride/"


def logged_in(user):
    client = Client()
    client.force_login(user)
    return client


def is_mp3(body):
    return body[:3] == b"ID3" or (body[0] == 0xFF and body[1] & 0xE0 == 0xE0)


def test_the_effective_script_plays_as_mp3(teammate, tenant_a):
    response = logged_in(teammate).get(BASE + "preview.mp3", {"tenant": "acme", "touchpoint": "inbound.greeting"})
    assert response.status_code == 200 and response["Content-Type"] == "audio/mpeg"
    assert is_mp3(response.content) and len(response.content) > 2000


def test_the_text_being_edited_plays_without_being_saved(teammate, tenant_a):
    client = logged_in(teammate)
    response = client.post(BASE + "preview.mp3", {"tenant_id": tenant_a.pk, "touchpoint": "callback.intro",
                                                  "text": "Hallo {{firstName}}, hier ist {{companyName}}."})
    assert response.status_code == 200 and is_mp3(response.content)
    assert not ScriptOverride.objects.exists()


def test_samples_fill_every_variable():
    assert sample_variables("{{firstName}} {{unknownThing}}") == {"firstName": "Anna", "unknownThing": "Beispiel"}


def test_another_tenant_cannot_be_played(teammate, tenant_b):
    client = logged_in(teammate)
    assert client.get(BASE + "preview.mp3", {"tenant": "globex", "touchpoint": "inbound.greeting"}).status_code == 404
    assert client.post(BASE + "preview.mp3", {"tenant_id": tenant_b.pk, "touchpoint": "inbound.greeting",
                                              "text": "Hallo"}).status_code == 404


def test_findings_come_back_while_typing_and_nothing_is_stored(teammate, tenant_a):
    response = logged_in(teammate).post(BASE + "analyse/", {"text": "Moechten Sie einen Rueckruf?",
                                                            "touchpoint": "inbound.greeting"})
    body = response.json()
    assert body["findings"] >= 1 and ">Moechten</mark>" in body["html"]
    assert not ScriptOverride.objects.exists()
    clean = logged_in(teammate).post(BASE + "analyse/", {"text": "Guten Tag.", "touchpoint": "inbound.greeting"})
    assert clean.json()["findings"] == 0


def test_analysis_needs_a_post(teammate):
    assert logged_in(teammate).get(BASE + "analyse/").status_code == 405
