"""The offline dialogue policy end to end by voice (issue 28, "Tests that must exist"):
with no language model configured, a caller of our own synthesis asks over the agent's
WebSocket for a callback and speaks a number; the policy reads it back digit by digit;
the caller confirms it — or says "nein" and says it again —; the callback becomes a
lead of kind `callback` with that number in E.164, linked to the call, and after the
call its analysis has the outcome `callback_requested`.

eSpeak's German digits are hard for Whisper base. What is said here was measured on
this machine (2026-11-25; `de+m3`, the tests' caller voice, each sentence synthesised
and heard several times): "Bitte rufen Sie mich morgen zurück." was heard as a callback
wish 4 times in 4 (once written "zu rücken", which the policy joins again; the wishes
with "Rückruf" came back as "Glück auf"); digits said one by one, each after a comma,
after "Meine Nummer ist", were heard with every digit for 040 123456 in 8 of 8 and for
089 123456 in 8 of 8 (030 123456: 10 of 11); the same numbers in digit groups ("null
vier null, eins zwei drei …") were heard right in none of 8. "Ja, das ist richtig." and
"Nein, das ist falsch." were heard word for word every time; "Ja, genau." as "Ja, gell.",
"Ja, ja." and "Ja. Ciao." (a goodbye). The round trip over a wider set of numbers is measured by
`bench/run.py digits_round_trip` (docs/performance.md).

The caller answers what the agent actually asks, as a person would: a read-back of
the wrong digits is answered "nein" and the number said again (at most a few times), so
a digit that recognition drops once does not fail the test, while the lead must still
hold exactly the number the caller meant."""
import asyncio
import re

import pytest

from agent_app.mind import filler
from calls_app.models import Call, CallAnalysis
from console.assistants.models import Assistant
from leads_app.models import Lead
from registry_app import snapshot
from speech_app.spoken import DIGIT_WORDS
from tests.agent_app.conftest import Caller, dial, grant, silence, spoken

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ASK = "Bitte rufen Sie mich morgen zurück."
YES = "Ja, das ist richtig."
NO = "Nein, das ist falsch."
# (the E.164 the lead must hold, how the caller says it)
HAMBURG = ("+4940123456", "Meine Nummer ist null, vier, null, eins, zwei, drei, vier, fünf, sechs.")
MUNICH = ("+4989123456", "Meine Nummer ist null, acht, neun, eins, zwei, drei, vier, fünf, sechs.")
MAX_UTTERANCES = 9  # the conversation's bound: a callback takes 3 when every word is heard
FILLER = filler("de")


@pytest.fixture(autouse=True)
def _no_language_model(settings):
    """No LLM configured: no registry lanes, the gateway's mock lane with the policy."""
    snapshot.invalidate()
    settings.GATEWAY_MODE = "mock"
    settings.GATEWAY_LANE_SETTINGS = {}
    yield
    snapshot.invalidate()


@pytest.fixture
def assistant(tenant_a):
    return Assistant.objects.create(tenant=tenant_a, name="Empfang",
                                    tools=["create_callback", "lookup_knowledge", "end_call"])


def read_back_digits(text):
    """The digits the agent read back ("Ich wiederhole: null vier null, …"), or None when
    `text` reads no number back."""
    if "wiederhole" not in text and "Ist die Nummer" not in text:
        return None
    words = re.findall(r"[a-zäöüß]+", text.lower())
    return "".join(str(DIGIT_WORDS.index(word)) for word in words if word in DIGIT_WORDS)


def national_digits(e164):
    return "0" + e164.removeprefix("+49")


OFFERED_YES, WHEN = "Ja, bitte.", "Morgen Vormittag."


def speech_of(*texts):
    """Each caller's sentence as audio, made before the conversation's event loop runs
    (the synthesis asks the database for its route)."""
    return {text: spoken(text) + silence(1.0) for text in texts}


class Conversation:
    def __init__(self, ws, speech):
        self.caller = Caller(ws)
        self.speech = speech
        self.said = []  # (what the caller said, what the agent heard, what the agent answered)

    async def opening(self):
        await self.caller.until("agent.done")

    async def say(self, text):
        """Says `text`; returns the agent's answer (after a filler, if one came first)."""
        assert len(self.said) < MAX_UTTERANCES, self.said
        await self.caller.stream(self.speech[text])
        heard = (await self.caller.until("transcript.final"))["text"]
        answer = ""
        while not answer or answer == FILLER:
            answer = (await self.caller.until("agent.speaking"))["text"]
            await self.caller.until("agent.done")
        self.said.append((text, heard, answer))
        return answer


async def _callback(url, *, numbers, speech):
    """A callback wish over the WebSocket. Whenever the agent asks for a number the
    caller says the one it is at in `numbers` (the wrong ones first, the right one
    last); a read-back while it is at a wrong one is answered "nein" and it goes on
    to the next; a read-back of the right one is confirmed (else "nein" and the right
    one again). Returns the conversation."""
    right = national_digits(numbers[-1][0])
    at = 0
    async with dial(url) as ws:
        talk = Conversation(ws, speech)
        await talk.opening()
        answer = await talk.say(ASK)
        while "wir rufen sie" not in answer.lower():
            digits = read_back_digits(answer)
            if digits is not None:
                if at < len(numbers) - 1:
                    at += 1
                    answer = await talk.say(NO)
                else:
                    answer = await talk.say(YES if digits == right else NO)
            elif "nummer" in answer.lower():
                answer = await talk.say(numbers[at][1])
            elif "wann" in answer.lower():
                answer = await talk.say(WHEN)
            elif "rückruf" in answer.lower() and "?" in answer:  # the wish was not heard as one: offered
                answer = await talk.say(OFFERED_YES)
            else:
                raise AssertionError(f"unexpected answer {answer!r} after {talk.said}")
        await ws.send('{"type": "end"}')
        await ws.wait_closed()
        return talk


def _the_callback(tenant, call_id, e164):
    lead = Lead.objects.for_tenant(tenant).get()
    assert (lead.kind, lead.phone) == ("callback", e164)
    call = Call.objects.get(pk=call_id)
    assert call.lead_id == lead.pk and call.status == "completed"
    analysis = CallAnalysis.objects.get(call_id=call_id)  # written when the call ended (jobs run inline here)
    assert "callback_requested" in analysis.outcome
    assert analysis.engine == CallAnalysis.Engine.POLICY
    return lead, analysis


def test_a_callback_wish_by_voice_is_read_back_confirmed_and_becomes_the_calls_lead(
        agent_server, api_a, tenant_a, assistant, whisper_ready, instant_speech):
    session = grant(api_a, agent_server.port, assistant=assistant.pk)
    speech = speech_of(ASK, YES, NO, OFFERED_YES, WHEN, HAMBURG[1])
    talk = asyncio.run(_callback(session["url"], numbers=[HAMBURG], speech=speech))

    read_backs = [read_back_digits(answer) for _, _, answer in talk.said if read_back_digits(answer) is not None]
    assert read_backs and read_backs[-1] == "040123456", talk.said  # read back digit by digit before it is taken
    assert talk.said[-1][0] == YES
    lead, analysis = _the_callback(tenant_a, session["callId"], HAMBURG[0])
    assert lead.preferred_at_resolved is not None  # "morgen" on the tenant's clock
    notes = list(Call.objects.with_transcript().get(pk=session["callId"]).transcript_entries
                 .filter(role="system").values_list("text", flat=True))
    assert any("create_callback" in note and HAMBURG[0] in note for note in notes), notes


def test_a_nein_to_the_read_back_corrects_the_number(
        agent_server, api_a, tenant_a, assistant, whisper_ready, instant_speech):
    session = grant(api_a, agent_server.port, assistant=assistant.pk)
    speech = speech_of(ASK, YES, NO, OFFERED_YES, WHEN, MUNICH[1], HAMBURG[1])
    talk = asyncio.run(_callback(session["url"], numbers=[MUNICH, HAMBURG], speech=speech))

    # The wrong number was read back, answered "nein", and the right one taken instead.
    read_backs = [(read_back_digits(answer), next_said) for (_, _, answer), (next_said, _, _)
                  in zip(talk.said, talk.said[1:], strict=False) if read_back_digits(answer) is not None]
    assert read_backs[0][0] != "040123456" and read_backs[0][1] == NO, talk.said
    assert read_backs[-1] == ("040123456", YES), talk.said
    _the_callback(tenant_a, session["callId"], HAMBURG[0])
