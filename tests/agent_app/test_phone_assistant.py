"""A phone call's conversation is the browser's, with the assistant's mind: the called
number's assistant (else the tenant's first) answers and is the call's, so its tools
and analysis apply; the assistant is told the channel and the caller's number; its
transfer_call hands the call over on the phone line (one note, the seconds up to the
hand-over), and a hand-over the carrier refuses is said and the call goes on. The
conversation core runs here without audio, behind a fake phone transport."""
import asyncio

import pytest

from agent_app import codes
from agent_app import conversation as conversation_module
from agent_app import session as core
from agent_app.audio import PhoneWire
from agent_app.models import AgentSession
from agent_app.services import agent_session_claim, phone_call_register
from agent_app.session import CallContext, Conversation, Transport
from calls_app.models import Call, UsageCounter
from calls_app.phone_calls import number_route
from calls_app.services import carrier_create
from console.assistants.models import Assistant
from console.numbers.services import number_create

pytestmark = pytest.mark.django_db(transaction=True)
CALLER, CALLED = "+4917612345678", "+493055500123"
TARGET = {"name": "Praxisteam", "e164": "+4930901829"}


@pytest.fixture
def assistants(tenant_a):
    tools = ["create_callback", "transfer_call", "end_call"]
    first = Assistant.objects.create(tenant=tenant_a, name="Allgemein", tools=tools)
    reception = Assistant.objects.create(tenant=tenant_a, name="Empfang", tools=tools, transfer_targets=[TARGET])
    return first, reception


def _phone_call(tenant, assistant_id=None, transport="twilio", call_sid="CA0001"):
    carrier, _ = carrier_create(carrier_id="tw1", kind="twilio", credentials={"account_sid": "AC" + "0" * 32,
                                                                                 "auth_token": "token"})
    number_create(tenant=tenant, e164=CALLED, assistant_id=assistant_id)
    call, token = phone_call_register(carrier=carrier, number=number_route(e164=CALLED), carrier_call_id=call_sid,
                                      from_e164=CALLER, to_e164=CALLED, transport=transport)
    session = agent_session_claim(token=token, transport=transport, carrier_id="tw1", carrier_call_id=call_sid)
    assert session is not None
    return call, session


def test_the_numbers_assistant_answers_and_hears_the_channel_and_the_callers_number(tenant_a, assistants):
    _, reception = assistants
    call, session = _phone_call(tenant_a, assistant_id=reception.pk)
    assert Call.objects.get(pk=call.pk).assistant_id == reception.pk  # its tools and analysis apply
    context = CallContext.of_agent_session(session)
    assert (context.assistant_id, context.channel, context.caller_e164) == (reception.pk, "Telefon", CALLER)
    prompt = core._mind_for(context).messages[0]["content"]
    assert "Kanal: Telefon" in prompt and f"Anrufernummer: {CALLER}" in prompt
    assert f"Weiterleitungsziele: Praxisteam ({TARGET['e164']})" in prompt


def test_without_an_assistant_on_the_number_the_tenants_first_answers(tenant_a, assistants):
    first, _ = assistants
    call, session = _phone_call(tenant_a)
    assert Call.objects.get(pk=call.pk).assistant_id == first.pk == session.assistant_id


def test_a_browser_session_stays_a_spoken_conversation_without_a_number(tenant_a, assistants, api_a):
    response = api_a.post("/api/voice/agent/sessions", {"language": "de"}, format="json")
    assert response.status_code == 201, response.content
    session = AgentSession.objects.select_related("tenant", "call").get()
    context = CallContext.of_agent_session(session)
    assert (context.channel, context.caller_e164) == ("Sprache", "")


class FakeLine(Transport):
    """A phone line that hands calls over (or refuses to) and records what it was asked."""

    wire = PhoneWire("mulaw", 8000)
    can_transfer = True

    def __init__(self, refuse=False):
        self.refuse, self.transferred, self.closed, self.said = refuse, [], [], []

    async def send_event(self, event):
        if event.get("type") == "agent.speaking":
            self.said.append(event["text"])

    async def send_audio(self, chunk):
        return None

    async def transfer(self, target):
        if self.refuse:
            raise RuntimeError("the carrier refused")
        self.transferred.append(target)

    async def close(self, code):
        self.closed.append(code)


async def _transfer_over(line, session):
    conversation = Conversation(line, CallContext.of_agent_session(session))
    await conversation.transfer(TARGET)
    return conversation


def test_the_assistants_transfer_hands_a_phone_call_over(tenant_a, assistants, monkeypatch):
    _, reception = assistants
    call, session = _phone_call(tenant_a, assistant_id=reception.pk)
    line = FakeLine()
    conversation = asyncio.run(_transfer_over(line, session))
    assert line.transferred == [TARGET["e164"]] and line.closed == [codes.CLOSE_NORMAL] and conversation.booked
    call = Call.objects.with_transcript().get(pk=call.pk)
    assert (call.status, call.transferred_to) == ("completed", TARGET["e164"])
    notes = [entry.text for entry in call.transcript_entries.all() if entry.role == "system"]
    assert notes == [f"Weitergeleitet an Praxisteam ({TARGET['e164']})"]  # once, naming the target
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.calls, counter.reserved_minutes) == (1, 0)


def test_a_refused_hand_over_is_said_and_the_call_goes_on(tenant_a, assistants, monkeypatch):
    _, reception = assistants
    call, session = _phone_call(tenant_a, assistant_id=reception.pk)

    def silent(text, **kwargs):
        return iter(())  # no audio: what is said still goes out as agent.speaking

    monkeypatch.setattr(conversation_module, "speak", silent)
    line = FakeLine(refuse=True)
    conversation = asyncio.run(_transfer_over(line, session))
    assert line.said == [core.TRANSFER_FAILED["de"]] and not line.closed and not conversation.closing
    call = Call.objects.get(pk=call.pk)
    assert (call.ended_at, call.transferred_to) == (None, "")
