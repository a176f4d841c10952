"""The admin's editor of assistants and HTTP tools: German, the same fields and the same
checks as the API, a tool's secret shown once."""
import re

import pytest
from django.test import Client
from standardwebhooks import Webhook

from console.assistants.models import Assistant
from console.numbers.services import number_create
from tests.assistants.conftest import knowledge_document
from tools_app.models import HttpTool
from tools_app.services import http_tool_create
from webhooks_app import signing

pytestmark = pytest.mark.django_db

FORM = {
    "name": "Empfang", "description": "", "language": "de", "voice": "",
    "instructions": "Sie sind die Telefonassistenz der Praxis Sonnenschein.",
    "opening_touchpoint": "inbound.greeting", "end_call_phrases_text": "Auf Wiederhören\n\nTschüss",
    "max_duration_sec": "300", "silence_timeout_sec": "", "tools": ["create_callback", "transfer_call"],
    "transfer_targets_text": "Zentrale: 030 901820\nLabor: +49 30 901821", "knowledge_all": "on",
    "knowledge_ids": "", "model_lane": "", "model_temperature": "0.4", "model_max_tokens": "",
    "analysis_summary": "on", "analysis_schema": '{"type": "object", "properties": {"grund": {"type": "string"}}}',
    "analysis_success_criteria": "Ein Rückruf wurde vereinbart.",
}


@pytest.fixture
def client(owner):
    found = Client()
    found.force_login(owner)
    return found


def test_the_editor_speaks_german(client):
    page = client.get("/admin/assistants/assistant/add/").content.decode()
    for label in ("Anweisungen", "Eröffnungsskript", "Werkzeuge", "Weiterleitungsziele", "Alle Wissensdokumente",
                  "Schema der Auswertung", "Erfolgskriterien", "Höchstdauer (Sekunden)", "Schlusssätze",
                  "Rückruf anlegen (create_callback)", "Auswertung nach dem Anruf"):
        assert label in page, label
    assert 'value="inbound.after_hours"' in page and 'value="call.hold"' not in page  # openers only


def test_an_assistant_is_created_in_the_admin_as_through_the_api(client, tenant_a):
    response = client.post("/admin/assistants/assistant/add/", {**FORM, "tenant": tenant_a.pk})
    assert response.status_code == 302, re.findall(r'class="errorlist[^"]*"[^>]*>(.*?)</ul>', response.content.decode())
    assistant = Assistant.objects.get()
    assert assistant.transfer_targets == [{"name": "Zentrale", "e164": "+4930901820"},
                                          {"name": "Labor", "e164": "+4930901821"}]
    assert assistant.tools == ["create_callback", "transfer_call"] and assistant.knowledge is None
    assert assistant.end_call_phrases == ["Auf Wiederhören", "Tschüss"] and assistant.model_temperature == 0.4
    assert assistant.analysis_schema["properties"] == {"grund": {"type": "string"}}
    assert assistant.max_duration_sec == 300 and assistant.silence_timeout_sec is None


def test_the_editor_refuses_what_the_api_refuses(client, tenant_a):
    response = client.post("/admin/assistants/assistant/add/", {
        **FORM, "tenant": tenant_a.pk, "transfer_targets_text": "Zentrale: 12",
        "analysis_schema": '{"type": "no-such-type"}', "max_duration_sec": "9999"})
    page = response.content.decode()
    assert response.status_code == 200 and not Assistant.objects.exists()
    assert "transferTargets[0].e164" in page and "analysis.schema" in page and "maximum call length" in page


def test_the_knowledge_can_be_limited_to_documents(client, tenant_a):
    first, second = knowledge_document(tenant_a, "Eins"), knowledge_document(tenant_a, "Zwei")
    client.post("/admin/assistants/assistant/add/", {**FORM, "tenant": tenant_a.pk, "knowledge_all": "",
                                                     "knowledge_ids": f"{first.pk}\n{second.pk}"})
    assert Assistant.objects.get().knowledge == [first.pk, second.pk]


def test_the_editor_refuses_documents_the_tenant_does_not_have(client, tenant_a, tenant_b):
    foreign = knowledge_document(tenant_b)
    response = client.post("/admin/assistants/assistant/add/", {**FORM, "tenant": tenant_a.pk, "knowledge_all": "",
                                                                "knowledge_ids": f"{foreign.pk}\nkd_unbekannt"})
    page = response.content.decode()
    assert response.status_code == 200 and not Assistant.objects.exists()
    assert f"No knowledge document &#x27;{foreign.pk}&#x27; in this tenant" in page
    assert "No knowledge document &#x27;kd_unbekannt&#x27;" in page


def test_a_change_keeps_the_tenant_and_shows_the_lists_as_lines(client, tenant_a):
    client.post("/admin/assistants/assistant/add/", {**FORM, "tenant": tenant_a.pk})
    assistant = Assistant.objects.get()
    page = client.get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode()
    assert "Zentrale: +4930901820" in page and 'name="tenant"' not in page
    response = client.post(f"/admin/assistants/assistant/{assistant.pk}/change/", {**FORM, "name": "Neu"})
    assert response.status_code == 302
    assistant.refresh_from_db()
    assert assistant.name == "Neu" and assistant.tenant == tenant_a


def test_an_assistant_that_numbers_use_is_not_deleted(client, tenant_a):
    assistant = Assistant.objects.create(tenant=tenant_a, name="Empfang")
    number_create(tenant=tenant_a, e164="+4930555000222", assistant_id=assistant.pk)
    page = client.get(f"/admin/assistants/assistant/{assistant.pk}/delete/").content.decode()
    assert "+4930555000222" in page
    client.post(f"/admin/assistants/assistant/{assistant.pk}/delete/", {"post": "yes"})
    assert Assistant.objects.filter(pk=assistant.pk).exists()


def test_a_tools_secret_is_shown_once_after_adding_it(client, tenant_a):
    response = client.post("/admin/tools_app/httptool/add/", {
        "tenant": tenant_a.pk, "name": "termin_pruefen", "description": "Prüft Termine.",
        "parameters": '{"type": "object", "properties": {}}', "url": "https://praxis.example/t", "timeout_ms": "2000"})
    page = response.content.decode()
    assert response.status_code == 200 and "nur dieses eine Mal" in page
    secret = re.search(r'id="tool-secret"[^>]*>(whsec_[^<]+)<', page).group(1)
    tool = HttpTool.objects.get()
    assert secret == signing.secret_for(tool.pk, tool.secret_nonce)
    headers = signing.headers_for(tool, msg_id="tc_x", payload="{}", now=tool.created_at, timestamp=__import__(
        "time").time())
    assert Webhook(secret).verify("{}", headers) == {}
    assert secret not in client.get(f"/admin/tools_app/httptool/{tool.pk}/change/").content.decode()


def test_the_tool_editor_refuses_a_private_url_and_a_built_in_name(client, tenant_a, settings):
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = False
    response = client.post("/admin/tools_app/httptool/add/", {
        "tenant": tenant_a.pk, "name": "end_call", "parameters": '{"type": "object"}',
        "url": "https://10.0.0.1/t", "timeout_ms": "2000"})
    page = response.content.decode()
    assert response.status_code == 200 and not HttpTool.objects.exists()
    assert "ist ein eingebautes Werkzeug" in page  # the API's message, in German in the admin


def test_the_speech_lanes_are_named_in_the_editor_as_through_the_api(client, tenant_a):
    from tests.speech_app.speech_server import load

    load()
    page = client.get("/admin/assistants/assistant/add/").content.decode()
    assert "Lane der Spracherkennung" in page and "Schlüsselbegriffe" in page
    refused = client.post("/admin/assistants/assistant/add/", {
        **FORM, "tenant": tenant_a.pk, "voice": "tts-azure-de:de-DE-Niemand", "transcriber_lane": "stt-vosk-de"})
    text = refused.content.decode()
    assert refused.status_code == 200 and not Assistant.objects.exists()
    assert "de-DE-Niemand" in text and "transcriber.lane" in text and "stt-deepgram" in text
    client.post("/admin/assistants/assistant/add/", {
        **FORM, "tenant": tenant_a.pk, "voice": "tts-azure-de:de-DE-KatjaNeural", "transcriber_lane": "stt-deepgram",
        "transcriber_keyterms_text": "Praxis Sonnenschein\n\nZahnreinigung"})
    assistant = Assistant.objects.get()
    assert assistant.voice == "tts-azure-de:de-DE-KatjaNeural"
    assert assistant.transcriber == {"lane": "stt-deepgram", "keyterms": ["Praxis Sonnenschein", "Zahnreinigung"]}
    edit = client.get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode()
    assert 'value="stt-deepgram"' in edit and "Zahnreinigung" in edit


def test_the_tool_editor_keeps_the_per_tenant_limit_and_still_changes_a_tool(client, tenant_a, settings):
    settings.TOOLS_MAX_PER_TENANT = 1
    tool, _secret = http_tool_create(tenant=tenant_a, data={"name": "erstes", "url": "https://praxis.example/1"})
    response = client.post("/admin/tools_app/httptool/add/", {
        "tenant": tenant_a.pk, "name": "zweites", "parameters": '{"type": "object"}',
        "url": "https://praxis.example/2", "timeout_ms": "2000"})
    page = response.content.decode()
    assert response.status_code == 200 and "so viele HTTP-Werkzeuge, wie er haben darf (1)" in page
    assert list(HttpTool.objects.values_list("name", flat=True)) == ["erstes"]
    changed = client.post(f"/admin/tools_app/httptool/{tool.pk}/change/", {
        "name": "erstes", "description": "Neu.", "parameters": '{"type": "object"}',
        "url": "https://praxis.example/neu", "timeout_ms": "1500"})
    assert changed.status_code == 302, changed.content
    tool.refresh_from_db()
    assert (tool.description, tool.url, tool.timeout_ms) == ("Neu.", "https://praxis.example/neu", 1500)


def test_a_warm_target_is_written_and_shown_with_its_marker(client, tenant_a):
    """"(warm)" after the number: the target's hand-over is warm (issue 37 §5); the
    editor shows it back, so saving the form again keeps it."""
    response = client.post("/admin/assistants/assistant/add/", {
        **FORM, "tenant": tenant_a.pk, "transfer_targets_text": "Zentrale: 030 901820 (warm)\nLabor: 030 901821"})
    assert response.status_code == 302
    assistant = Assistant.objects.get()
    assert assistant.transfer_targets == [{"name": "Zentrale", "e164": "+4930901820", "warm": True},
                                          {"name": "Labor", "e164": "+4930901821"}]
    page = client.get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode()
    assert "Zentrale: +4930901820 (warm)\nLabor: +4930901821</textarea>" in page
    assert "„(warm)“ hinter der Nummer" in page
