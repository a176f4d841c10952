"""A warm hand-over of a SIP call (issue 37 §5), bridged by our SIP agent, against the
real kamailio registrar and two real baresip phones on loopback (tests/sip): the caller,
and the person the assistant hands over to. The person's phone rings while the caller
stays with the agent; answering, it hears the German summary (recognised by Whisper),
then the caller's voice and the caller theirs, through our RTP bridge; one hang-up ends
both legs (the caller's or the person's) and the call is booked once, handed over.
Nobody answering: our INVITE is CANCELled, the caller hears the agent again, is
offered a callback and takes it; a person declining gives the caller back at once."""
import asyncio

import numpy
import pytest

from agent_app import phone
from agent_app.audio import PhoneWire
from calls_app.models import Call, UsageCounter, WarmTransfer
from calls_app.services import carrier_create
from calls_app.warm_transfers import warm_summary
from console.assistants.models import Assistant
from console.numbers.services import number_create
from leads_app.models import Lead
from speech_app.stt import Deadline, recognizer
from tests.agent_app.conftest import spoken
from tests.agent_app.test_sip_agent import (  # noqa: F401 (trunk: a fixture)
    ASKED,
    CALLED,
    CALLER_ACCOUNT,
    CALLER_E164,
    PCM8K,
    PERSON,
    registered,
    trunk,
    until,
)
from tests.agent_app.test_warm_transfer import _in_thread
from tests.sip.baresip import Phone, active_windows
from tools_app.services import tool_run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
TARGETS = [{"name": "Zentrale", "e164": PERSON, "warm": True}]
REASON = "Frage zur Rechnung vom März"


@pytest.fixture
def line(trunk, tmp_path, tenant_a, settings):  # noqa: F811 (the shared fixture)
    """The registered trunk, an assistant with a warm target, and both phones."""
    registrar, agent, password, phones = trunk
    number_create(tenant=tenant_a, e164=CALLED)
    Assistant.objects.create(tenant=tenant_a, name="Empfang", transfer_targets=TARGETS,
                             tools=["create_callback", "transfer_call", "end_call"])
    carrier_create(carrier_id="sip1", kind="sip", credentials={
        "registrar": f"sip:127.0.0.1:{registrar.port}", "username": "stimmwerk", "password": password})
    assert until(lambda: (r := registered("sip1")) is not None and r.state == "registered", 30)
    person = Phone(tmp_path / "person", "human", registrar.accounts["human"], registrar.port).start()
    caller = Phone(tmp_path / "caller", CALLER_ACCOUNT, registrar.accounts[CALLER_ACCOUNT], registrar.port).start()
    phones += [person, caller]
    return registrar, agent, person, caller


def _heard(phone_: Phone) -> numpy.ndarray:
    """What the phone heard in its running call so far (its decode dump, 8 kHz)."""
    dumps = sorted((phone_.dir / "rec").glob("dump-*-dec.wav"), key=lambda path: path.stat().st_mtime)
    raw = dumps[-1].read_bytes()[44:] if dumps else b""
    return numpy.frombuffer(raw[:len(raw) // 2 * 2], dtype="<i2")


def _recognised(samples: numpy.ndarray) -> set[str]:
    """The words Whisper hears in 8 kHz phone audio, widened as the agent hears a caller.
    The test's own listening gets a deadline of its own: under CI's parallel load the
    product's deadline for 11 s of audio (20 s) measures the machine, not the bridge."""
    pcm16k = PhoneWire("pcm_s16le", 8000).to_pcm16k(samples.astype("<i2").tobytes())
    return _words(recognizer("whisper").transcribe(pcm16k, language="de", deadline=Deadline(300)).text)


def _words(text: str) -> set[str]:
    return set("".join(c if c.isalpha() else " " for c in text.casefold()).split())


def _voice_after(phone_: Phone, since: int, windows: int, timeout: float) -> bool:
    """Whether the phone heard at least `windows` 20 ms windows of voice after window `since`."""
    return bool(until(lambda: active_windows(_heard(phone_), 8000)[since:].sum() >= windows, timeout))


def _quiet(phone_: Phone, seconds: float = 1.0, timeout: float = 60) -> bool:
    """Waits until the phone heard nothing for `seconds` (the far end finished speaking)."""
    windows = int(seconds * 50)
    return bool(until(lambda: (a := active_windows(_heard(phone_), 8000)).size > windows
                      and not a[-windows:].any(), timeout))


def test_the_person_hears_the_summary_then_the_caller_through_our_bridge(line, tenant_a, whisper_ready):
    registrar, agent, person, caller = line
    since = caller.dial(CALLED)
    assert caller.wait_event("CALL_ESTABLISHED", 25, since), caller.events[-6:]
    call = until(lambda: Call.objects.select_related("assistant").filter(to_e164=CALLED).first(), 10)
    assert caller.wait_far_end_quiet(40), "the agent's opening was not heard"

    # The model's tool call, in a worker thread as the conversation runs it: the person is rung.
    said = _words(warm_summary(call=call, name="Zentrale", reason=REASON))  # what the person is to hear
    result = _in_thread(tool_run, assistant=call.assistant, call_id=call.pk, name="transfer_call",
                        arguments={"target": "Zentrale", "reason": REASON})
    ringing = person.wait_event("CALL_INCOMING", 20)
    assert ringing, person.events[-5:]
    assert not result.done()  # the caller waits with the agent while the person is rung
    # kamailio's sipdump is written after it relays a message: read until it shows the INVITE.
    invites = until(lambda: [m for m in registrar.messages() if m.direction == "rcv" and m.method == "INVITE"
                             and PERSON in m.first_line], 10)
    assert invites and CALLED in invites[-1].header("P-Preferred-Identity")  # our number shown to the person
    answered_at = person.events.index(ringing)
    person.command("accept")
    assert person.wait_event("CALL_ESTABLISHED", 10, answered_at)
    assert result.result(timeout=30)["result"] == {"name": "Zentrale", "e164": PERSON, "mode": "warm"}

    # The conversation hands over: it returns once the summary was heard out and the legs are bridged.
    conversation = phone.live[call.pk]
    handed = asyncio.run_coroutine_threadsafe(conversation.transfer(result.result()["result"]), agent.loop)
    handed.result(timeout=90)
    summary = _heard(person)
    assert active_windows(summary, 8000).sum() > 150  # seconds of speech
    # Whisper base hears eSpeak's German over a phone line roughly ("Hallo Fenskale, hier ist
    # die Reformsistenz … ein Anruf von der Nummer …"): its greeting and some of its words
    # (on a busy CI machine two of the longer ones).
    heard = _recognised(summary)
    assert "hallo" in heard and len({word for word in said & heard if len(word) >= 4}) >= 2, (heard, said)
    transfer = WarmTransfer.objects.get()
    assert (transfer.status, transfer.summary) == ("answered", "")

    # Bridged: what the caller says reaches the person, and the person's voice the caller.
    person_at = len(active_windows(_heard(person), 8000))
    caller.play(numpy.frombuffer(spoken(ASKED, PCM8K), dtype="<i2"))
    assert _voice_after(person, person_at, 50, 20), "the caller's voice did not reach the person"
    caller_at = len(active_windows(_heard(caller), 8000))
    person.play(numpy.frombuffer(spoken("Guten Tag, hier ist die Zentrale.", PCM8K), dtype="<i2"))
    assert _voice_after(caller, caller_at, 40, 20), "the person's voice did not reach the caller"
    # The agent no longer listens: nothing the caller said after the hand-over is in the transcript.
    assert not Call.objects.get(pk=call.pk).transcript_entries.filter(role="user").exists()

    # One hang-up ends both legs; the call was booked once, at the hand-over, with its note.
    caller.hang_up(since)
    assert person.wait_event("CALL_CLOSED", 15, answered_at), person.events[-5:]
    ended = Call.objects.with_transcript().get(pk=call.pk)
    assert (ended.status, ended.transferred_to) == ("completed", PERSON) and ended.ended_at is not None
    assert [e.text for e in ended.transcript_entries.all()][-1] == (
        f"Weitergeleitet an Zentrale ({PERSON}) nach Übergabe mit Zusammenfassung")
    assert [a["outcome"] for a in ended.assistant_actions if a["tool"] == "transfer_call"] == ["answered"]
    assert UsageCounter.objects.get(tenant=tenant_a).calls == 1
    assert until(lambda: not agent.agent.calls, 10), agent.agent.calls  # both legs' ports given back


def test_nobody_answering_cancels_the_ring_and_the_caller_takes_a_callback(line, tenant_a, mock_gateway, whisper_ready):
    """By voice, through the offline policy: the caller asks for a person, the warm
    target rings and nobody answers; our INVITE is CANCELled, the caller hears the
    agent again, is offered a callback and takes it: a lead for their number."""
    registrar, agent, person, caller = line
    mock_gateway.VOICE_WARM_TRANSFER_RING_SEC = 4
    # The business's vocabulary (Whisper's prompt): over the phone line Whisper base heard
    # "Mitarbeiter sprechen" as "Mitarbeiter stressen" or "Metabatter" at times without it.
    Assistant.objects.update(transcriber={"keyterms": ["Mitarbeiter", "sprechen", "Rückruf", "Vormittag"]})
    since = caller.dial(CALLED)
    assert caller.wait_event("CALL_ESTABLISHED", 25, since)
    call = until(lambda: Call.objects.filter(to_e164=CALLED).first(), 10)
    assert caller.wait_far_end_quiet(40), "the agent's opening was not heard"

    caller.play(numpy.frombuffer(spoken("Ich möchte gerne mit einem Mitarbeiter sprechen.", PCM8K), dtype="<i2"))
    ringing = person.wait_event("CALL_INCOMING", 60)
    assert ringing, [e.text for e in call.transcript_entries.filter(role="user")]
    closed = person.wait_event("CALL_CLOSED", 20, person.events.index(ringing))
    assert closed, person.events[-5:]  # nobody picked up: the ring ended by our CANCEL
    cancels = until(lambda: [m for m in registrar.messages() if m.direction == "rcv" and m.method == "CANCEL"], 10)
    assert cancels and PERSON in cancels[-1].first_line
    # The caller hears the agent again: it says nobody answered and offers a callback.
    back_at = len(active_windows(_heard(caller), 8000))
    assert _voice_after(caller, back_at, 50, 60), "the caller did not hear the agent again"
    assert until(lambda: call.transcript_entries.filter(role="assistant", text__contains="niemand abgenommen")
                 .exists(), 30)
    assert call.transcript_entries.filter(role="system", text__contains="transfer_not_answered").exists()
    assert (WarmTransfer.objects.get().status, WarmTransfer.objects.get().summary) == ("not_answered", "")

    for answer, next_question in (("Ja, gerne.", "Nummer, von der Sie gerade anrufen"),
                                  ("Ja.", "Wann passt Ihnen der Rückruf"), ("Morgen Vormittag.", None)):
        assert _quiet(caller), "the agent did not finish speaking"
        caller.play(numpy.frombuffer(spoken(answer, PCM8K), dtype="<i2"))
        if next_question:
            assert until(lambda q=next_question: call.transcript_entries.filter(role="assistant", text__contains=q)
                         .exists(), 60), [e.text for e in call.transcript_entries.all()]
    lead = until(lambda: Lead.objects.for_tenant(tenant_a).first(), 60)
    assert lead is not None and (lead.kind, lead.phone) == ("callback", CALLER_E164)
    caller.hang_up(since)
    ended = until(lambda: (c := Call.objects.get(pk=call.pk)).ended_at and c, 20)
    assert ended and ended.transferred_to in ("", None)
    facts_actions = [a for a in ended.assistant_actions if a["tool"] == "transfer_call"]
    assert [a["outcome"] for a in facts_actions] == ["not_answered"]


def test_a_declining_person_gives_the_caller_back_at_once_and_the_person_s_hang_up_ends_both(line, tenant_a,
                                                                                               settings):
    registrar, agent, person, caller = line
    settings.VOICE_WARM_TRANSFER_RING_SEC = 20
    since = caller.dial(CALLED)
    assert caller.wait_event("CALL_ESTABLISHED", 25, since)
    call = until(lambda: Call.objects.select_related("assistant").filter(to_e164=CALLED).first(), 10)

    # Declined while ringing: the tool answers transfer_not_answered long before the 20 s.
    result = _in_thread(tool_run, assistant=call.assistant, call_id=call.pk, name="transfer_call",
                        arguments={"target": "Zentrale"})
    ringing = person.wait_event("CALL_INCOMING", 20)
    assert ringing, person.events[-5:]
    person.command("hangup")
    assert result.result(timeout=15)["error"] == "transfer_not_answered"
    assert WarmTransfer.objects.get().status == "not_answered"

    # Asked again, answered, joined; then the person hangs up: the caller's call ends too.
    result = _in_thread(tool_run, assistant=call.assistant, call_id=call.pk, name="transfer_call",
                        arguments={"target": "Zentrale"})
    ringing = person.wait_event("CALL_INCOMING", 20, person.events.index(ringing) + 1)
    assert ringing, person.events[-5:]
    answered_at = person.events.index(ringing)
    person.command("accept")
    target = result.result(timeout=30)["result"]
    handed = asyncio.run_coroutine_threadsafe(phone.live[call.pk].transfer(target), agent.loop)
    handed.result(timeout=90)
    person.hang_up(answered_at)
    assert caller.wait_event("CALL_CLOSED", 15, since), caller.events[-5:]
    ended = Call.objects.get(pk=call.pk)
    assert (ended.transferred_to, [a["outcome"] for a in ended.assistant_actions if a["tool"] == "transfer_call"]) \
        == (PERSON, ["not_answered", "answered"])
    assert UsageCounter.objects.get(tenant=tenant_a).calls == 1
    assert until(lambda: not agent.agent.calls, 10), agent.agent.calls
