"""An assistant's own greeting: what its callers hear first after the AI disclosure, on
the browser's and the phone's paths; linted like a script; without one, the opening
touchpoint's script; the admin shows what the caller hears first."""
import asyncio
import time
import uuid

import pytest
from django.test import Client

from agent_app.conversation import opening
from calls_app.models import Call
from calls_app.services import carrier_create
from console.assistants.models import Assistant
from console.numbers.services import number_create
from tests.agent_app.conftest import Caller, dial, grant
from tests.agent_app.phone import CALLED, AudioSocketPeer
from tests.agent_app.test_audiosocket import register

GREETING = "Willkommen in der Praxis Weber am Stadtpark. Wie kann ich Ihnen helfen?"


@pytest.fixture
def weber(tenant_a):
    # Named so that it is not the tenant's first (by name): the number or the session names it.
    Assistant.objects.create(tenant=tenant_a, name="Aaa Empfang")
    return Assistant.objects.create(tenant=tenant_a, name="Praxis Weber", greeting=GREETING)


@pytest.mark.django_db
def test_the_greeting_follows_the_disclosure_and_an_empty_one_falls_back_to_the_script(tenant_a, weber):
    said = opening(tenant=tenant_a, variables={}, assistant=weber)
    assert said.text == f"{tenant_a.disclosure_text.strip()} {GREETING}"
    weber.greeting = ""
    fallback = opening(tenant=tenant_a, variables={}, assistant=weber)
    assert fallback.text == opening(tenant=tenant_a, variables={}).text  # inbound.greeting as the tenant has it
    weber.greeting = "Hallo, hier ist {{companyName}}."
    assert opening(tenant=tenant_a, variables={}, assistant=weber).text.endswith(f"Hallo, hier ist {tenant_a.name}.")


@pytest.mark.django_db
def test_the_api_takes_the_greeting_and_refuses_what_the_linter_calls_an_error(api_a, weber):
    changed = api_a.patch(f"/v2/assistants/{weber.pk}", {"greeting": "Guten Tag, hier ist die Praxis."},
                          format="json")
    assert changed.status_code == 200 and changed.json()["greeting"] == "Guten Tag, hier ist die Praxis."
    refused = api_a.patch(f"/v2/assistants/{weber.pk}", {"greeting": "Wir rufen Sie zurueck."}, format="json")
    assert refused.status_code == 400
    assert "greeting" in refused.json()["error"]["details"]  # "zurueck": umlauts written out (rule umlaute)
    cleared = api_a.patch(f"/v2/assistants/{weber.pk}", {"greeting": ""}, format="json")
    assert cleared.status_code == 200 and cleared.json()["greeting"] == ""


@pytest.mark.django_db
def test_the_admin_shows_what_the_caller_hears_first(owner, tenant_a, weber):
    tenant_a.recording_enabled = True
    tenant_a.save(update_fields=["recording_enabled"])
    client = Client()
    client.force_login(owner)
    page = client.get(f"/admin/assistants/assistant/{weber.pk}/change/").content.decode()
    assert "Anrufer hören zuerst" in page and "Begrüßung" in page
    assert f"{tenant_a.disclosure_text.strip()} Dieses Gespräch wird aufgezeichnet. {GREETING}" in page


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_browser_session_with_the_assistant_hears_its_greeting(agent_server, api_a, tenant_a, weber,
                                                                  instant_speech):
    session = grant(api_a, agent_server.port, assistant=weber.pk)

    async def talk():
        async with dial(session["url"]) as ws:
            said = await Caller(ws).until("agent.speaking")
            await ws.send('{"type": "end"}')
            await ws.wait_closed()
            return said

    assert asyncio.run(talk())["text"] == f"{tenant_a.disclosure_text.strip()} {GREETING}"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_phone_call_to_the_assistants_number_hears_its_greeting(audiosocket, client, tenant_a, weber):
    tenant_a.max_call_minutes = 1
    tenant_a.save(update_fields=["max_call_minutes"])
    number_create(tenant=tenant_a, e164=CALLED, assistant_id=weber.pk)
    _, secret = carrier_create(carrier_id="ast1", kind="asterisk")
    call_uuid = uuid.UUID(register(client, secret).content.decode())

    async def call():
        async with AudioSocketPeer(audiosocket.port) as peer:
            await peer.send(0x01, call_uuid.bytes)
            await peer.audio_until(lambda: peer.audio_in() and time.monotonic() - peer.audio_in()[-1][0] > 1.0)
            await peer.send(0x00)
            await asyncio.wait_for(peer.closed.wait(), 30)

    asyncio.run(call())
    first = Call.objects.get().transcript_entries.order_by("ts").first()
    assert first.role == "assistant" and first.text == f"{tenant_a.disclosure_text.strip()} {GREETING}"
