"""The registry in the admin: browsable, filterable, read-only."""
import json

import pytest
from django.contrib.auth import get_user_model

from registry_app.models import Lane, RegistryVersion
from tests.registry_app.conftest import lane, load


@pytest.fixture
def admin_client(client, db):
    user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(user)
    return client


def test_lane_list_filters_and_searches(loaded, admin_client):
    page = admin_client.get("/admin/registry_app/lane/?capability=stt&status__exact=live")
    assert page.status_code == 200
    assert page.context["cl"].result_count == 2  # Whisper base and Vosk
    for parameter in ("capability", "status", "hosting", "provider", "quality_tier", "latency_class"):
        assert f"{parameter}=" in page.content.decode() or f"{parameter}__exact=" in page.content.decode()
    found = admin_client.get("/admin/registry_app/lane/?q=deepgram")
    assert [row.lane_id for row in found.context["cl"].result_list] == ["stt-deepgram"]
    by_provider = admin_client.get("/admin/registry_app/lane/?q=Rhasspy")
    assert [row.lane_id for row in by_provider.context["cl"].result_list] == ["tts-piper-de"]


def test_lane_detail_is_readable(loaded, admin_client):
    pk = Lane.objects.get(lane_id="tts-azure-de").pk
    page = admin_client.get(f"/admin/registry_app/lane/{pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    for shown in ("14.5 EUR pro 1M chars", "de-DE-KatjaNeural", "tests/speech_app/test_azure_tts.py",
                  "speech_app/providers/azure_tts.py", "Abrechnung pro Zeichen.", "nicht geprüft"):
        assert shown in text
    assert 'name="_save"' not in text  # read-only: no save button


def test_unknown_price_is_shown_as_unknown(loaded, admin_client):
    lane(loaded, "tts-azure-de")["cost"]["eur"] = None
    load(loaded)
    page = admin_client.get("/admin/registry_app/lane/?q=tts-azure-de")
    assert "unbekannt (nie als kostenlos gezählt)" in page.content.decode()


def test_registry_data_cannot_be_added_changed_or_deleted(loaded, admin_client):
    pk = Lane.objects.get(lane_id="tts-azure-de").pk
    assert admin_client.get("/admin/registry_app/lane/add/").status_code == 403
    response = admin_client.post(f"/admin/registry_app/lane/{pk}/change/", {"name": "changed"})
    assert response.status_code == 403
    assert admin_client.post(f"/admin/registry_app/lane/{pk}/delete/", {"post": "yes"}).status_code == 403
    assert Lane.objects.get(pk=pk).name == "Azure Neural Katja"
    number = RegistryVersion.objects.get().number
    assert admin_client.post(f"/admin/registry_app/registryversion/{number}/delete/",
                             {"post": "yes"}).status_code == 403


def test_versions_show_their_diff(loaded, admin_client):
    newer = json.loads(json.dumps(loaded))
    lane(newer, "tts-azure-de")["status"] = "key-gated"
    number = load(newer).version.number
    assert admin_client.get("/admin/registry_app/registryversion/").status_code == 200
    page = admin_client.get(f"/admin/registry_app/registryversion/{number}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "status: &#x27;key-ready&#x27; → &#x27;key-gated&#x27;" in html
    # The diff comes before the whole document, which is folded away.
    assert html.index("key-gated") < html.index('<details><summary>')


def test_layers_and_probe_results_are_listed(loaded, admin_client):
    assert "speech-module" in admin_client.get("/admin/registry_app/integrationlayer/").content.decode()
    assert admin_client.get("/admin/registry_app/lanehealth/").status_code == 200
