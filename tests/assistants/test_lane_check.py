"""The assistant's lanes in the admin (issue 39 §3): the voice and the transcriber are
dropdowns of the registry's lanes that can be called now (like the chat lane), and
"Verbindung prüfen" calls each lane the saved assistant names once — a fake
OpenAI-compatible chat server, Azure's streaming TTS and Deepgram's streaming STT on
loopback — and tells in German what answered, or why not."""
import re

import pytest
from django.test import Client

from console.assistants.models import Assistant
from registry_app import snapshot
from registry_app.lanes.config import lane_variable
from tests.azure_tts_fake import FakeAzureTts
from tests.deepgram_fake import FakeDeepgram
from tests.gateway_app.conftest import streaming_lane
from tests.openai_fake import Reply
from tests.speech_app.speech_server import load

pytestmark = pytest.mark.django_db
VOICE = "tts-azure-de:de-DE-KatjaNeural"


@pytest.fixture
def live(settings):
    snapshot.invalidate()
    settings.GATEWAY_MODE = "live"
    settings.GATEWAY_MAX_EUR = 0.0
    settings.GATEWAY_LANE_SETTINGS = {}
    settings.GATEWAY_FIRST_TOKEN_SEC = 5
    yield settings
    snapshot.invalidate()


@pytest.fixture
def providers(live):
    with FakeAzureTts(chunks=2, chunk_bytes=1600) as azure, FakeDeepgram(utterances=[]) as deepgram:
        live.GATEWAY_LANE_SETTINGS = {
            lane_variable("tts-azure-de", "KEY"): azure.key, lane_variable("tts-azure-de", "ENDPOINT"): azure.base_url,
            lane_variable("stt-deepgram", "KEY"): deepgram.key,
            lane_variable("stt-deepgram", "ENDPOINT"): deepgram.base_url}
        yield azure, deepgram


def admin(owner):
    client = Client(HTTP_ACCEPT_LANGUAGE="de")
    client.force_login(owner)
    return client


def options(page, name):
    select = re.search(rf'<select name="{name}"[^>]*>(.*?)</select>', page, re.S)
    assert select, f"no dropdown {name}"
    return re.findall(r'<option value="([^"]*)"', select.group(1))


def test_voice_and_transcriber_are_dropdowns_of_the_lanes_that_can_be_called(owner, tenant_a, live):
    load()
    assistant = Assistant.objects.create(tenant=tenant_a, name="Empfang", voice="de+f3")
    page = admin(owner).get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode()
    # Without their keys Azure's voices and Deepgram cannot be called: not offered.
    assert VOICE not in options(page, "voice") and "de+f3" in options(page, "voice")  # the saved one stays
    assert options(page, "transcriber_lane") == [""]
    live.GATEWAY_LANE_SETTINGS = {lane_variable("tts-azure-de", "KEY"): "k", lane_variable("stt-deepgram", "KEY"): "k"}
    page = admin(owner).get(f"/admin/assistants/assistant/{assistant.pk}/change/").content.decode()
    assert VOICE in options(page, "voice") and "" in options(page, "voice")
    # Streaming stt lanes only: a batch lane (stt-vosk-de) cannot be a call's transcriber.
    assert options(page, "transcriber_lane") == ["", "stt-deepgram"]
    assert "Eigene Spracherkennung des Dienstes" in page and "Verbindung prüfen" in page


def test_the_check_calls_each_lane_and_says_what_answered(owner, tenant_a, providers, chat_server):
    azure, deepgram = providers
    model = chat_server(Reply(text="Verbindung steht."))
    load(streaming_lane("chat-praxis", endpoint=model.url))
    assistant = Assistant.objects.create(tenant=tenant_a, name="Empfang", model_lane="chat-praxis", voice=VOICE,
                                         transcriber={"lane": "stt-deepgram", "keyterms": []})
    page = admin(owner).post(f"/admin/assistants/assistant/{assistant.pk}/check/", follow=True).content.decode()
    assert "Sprachmodell: chat-praxis (API) antwortete in" in page and "„Verbindung steht.“" in page
    assert f"Stimme {VOICE}: tts-azure-de sprach" in page
    assert "Spracherkennung stt-deepgram: verbunden, Testaudio angenommen" in page
    assert len(model.requests) == 1 and azure.requests and len(deepgram.connections) == 1


def test_a_lane_that_fails_is_named_with_why(owner, tenant_a, providers, chat_server):
    azure, _ = providers
    model = chat_server(Reply(text="x", status=500))
    load(streaming_lane("chat-praxis", endpoint=model.url))
    azure.key = "a-different-key"  # the stored key is refused now
    assistant = Assistant.objects.create(tenant=tenant_a, name="Empfang", model_lane="chat-praxis", voice=VOICE)
    page = admin(owner).post(f"/admin/assistants/assistant/{assistant.pk}/check/", follow=True).content.decode()
    assert "Sprachmodell: Die gewählte Lane chat-praxis antwortete nicht" in page \
        or "Sprachmodell chat-praxis: keine Antwort" in page
    assert f"Stimme {VOICE}: nicht erreichbar" in page
    assert model.requests  # it was called, not just looked at


def test_only_a_user_who_may_change_the_assistant_checks_it(teammate, tenant_a, live):
    assistant = Assistant.objects.create(tenant=tenant_a, name="Empfang")
    assert admin(teammate).post(f"/admin/assistants/assistant/{assistant.pk}/check/").status_code == 404
    assert admin(teammate).get(f"/admin/assistants/assistant/{assistant.pk}/check/").status_code in (404, 405)
