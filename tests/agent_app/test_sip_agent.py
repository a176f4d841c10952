"""Stimmwerk as a SIP user agent against real third-party SIP software on loopback: a
carrier-like `kamailio` registrar that demands digest auth (tests/sip/kamailio.py) and
a real SIP phone, `baresip` (tests/sip/baresip.py). The agent runs in a thread of the
test process (the test's settings and database apply), as `manage.py sip_agent` runs it.

The carriers are created after the agent started (it reads them anew); the right
password registers, a wrong one shows `failing` with the trunk's 403 and is not retried
in a hot loop; the phone's call to the tenant's number is answered with PCMA, hears the
disclosure first, is heard, its RFC 4733 keys are noted, and the call is booked once;
an unknown number is refused with 404 and books nothing; hostile datagrams leave the
agent serving, and so does `sipsak` (Debian's SIP swiss army knife): its OPTIONS ping,
malformed requests, a flood and random traces, after which a phone's call is answered."""
import asyncio
import contextlib
import io
import logging
import os
import re
import socket
import subprocess
import threading
import time
import uuid

import numpy
import pytest
from django.core.management import CommandError, call_command

from agent_app.audio import WireFormat, alaw_decode, alaw_encode
from calls_app.models import Call, SipRegistration, UsageCounter
from calls_app.services import carrier_create
from console.numbers.services import number_create
from tests.agent_app.conftest import spoken
from tests.azure_tts_fake import FakeAzureTts, tone_of
from tests.deepgram_fake import FakeDeepgram
from tests.sip.baresip import Phone, active_windows
from tests.sip.kamailio import Kamailio, free_port, options_ping

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
CALLED, UNKNOWN, PERSON = "+4930111000", "+4930111999", "+4930222000"
CALLER_ACCOUNT, CALLER_E164 = "017612345678", "+4917612345678"
PCM8K = WireFormat("pcm_s16le", 8000)
ASKED = "Ich möchte am Montag einen Termin für eine Beratung vereinbaren."


class AgentThread:
    """The SIP agent's event loop in a thread, on a free port."""

    def __init__(self) -> None:
        from agent_app.sip.agent import SipAgent

        self.port = free_port()
        rtp = free_port()
        self.agent = SipAgent("127.0.0.1", self.port, rtp_ports=f"{rtp}-{rtp + 40}")
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.task: asyncio.Task | None = None

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            started = asyncio.Event()
            self.task = self.loop.create_task(self.agent.run(started))
            self.loop.create_task(self._signal(started))
            try:
                self.loop.run_until_complete(self.task)
            except (asyncio.CancelledError, Exception):
                pass

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.ready.wait(15), "the SIP agent did not start"

    async def _signal(self, started: asyncio.Event) -> None:
        await started.wait()
        self.ready.set()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(lambda: self.task and self.task.cancel())
        self.thread.join(timeout=30)


def until(predicate, timeout: float, step: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


@pytest.fixture
def trunk(tmp_path, transactional_db, settings):
    settings.SIP_RELOAD_SEC = 0.5
    settings.SIP_REGISTER_BACKOFF_SEC = 30
    settings.SIP_RTP_TIMEOUT_SEC = 15
    settings.AGENT_STT_DEADLINE_SEC = 120
    password = "Sw" + uuid.uuid4().hex[:14]
    registrar = Kamailio(tmp_path / "kam", {"stimmwerk": password, "stimmbad": "Bd" + uuid.uuid4().hex[:10],
                                            CALLER_ACCOUNT: "Ca" + uuid.uuid4().hex[:10], "human": "Hu" + uuid.uuid4().hex[:10]},
                         {CALLED: "stimmwerk", UNKNOWN: "stimmwerk", PERSON: "human"}).start()
    agent = AgentThread()
    phones: list[Phone] = []
    yield registrar, agent, password, phones
    for phone in phones:
        phone.stop()
    agent.stop()
    registrar.stop()


def registered(carrier_id: str) -> SipRegistration | None:
    return SipRegistration.objects.filter(carrier_id=carrier_id).first()


def answering(trunk, tenant) -> None:
    """The tenant's number CALLED on the trunk's carrier `sip1`, once the agent registered it."""
    registrar, _agent, password, _phones = trunk
    number_create(tenant=tenant, e164=CALLED)
    carrier_create(carrier_id="sip1", kind="sip", credentials={
        "registrar": f"sip:127.0.0.1:{registrar.port}", "username": "stimmwerk", "password": password})
    assert until(lambda: (r := registered("sip1")) is not None and r.state == "registered", 30)


def test_registers_answers_a_real_phone_and_books_the_call_once(trunk, tmp_path, tenant_a, client, whisper_ready):
    registrar, agent, password, phones = trunk
    number_create(tenant=tenant_a, e164=CALLED)
    carrier_create(carrier_id="sip1", kind="sip", credentials={
        "registrar": f"sip:127.0.0.1:{registrar.port}", "username": "stimmwerk", "password": password})
    carrier_create(carrier_id="sipbad", kind="sip", credentials={
        "registrar": f"sip:127.0.0.1:{registrar.port}", "username": "stimmbad", "password": "falsch"})

    ok = until(lambda: (r := registered("sip1")) is not None and r.state == "registered", 30)
    assert ok, registered("sip1")
    bad = until(lambda: (r := registered("sipbad")) is not None and r.state == "failing" and r, 30)
    assert bad and "403" in bad.reason, bad
    registers = [m for m in registrar.messages() if m.direction == "rcv" and m.method == "REGISTER"]
    assert any("Authorization: Digest" in m.text for m in registers if "stimmwerk" in m.header("To"))
    answered = [m.status for m in registrar.messages() if m.direction == "snd" and m.cseq_method == "REGISTER"]
    assert 401 in answered and 200 in answered
    health = client.get("/health").json()
    states = {entry["id"]: entry for entry in health["sipCarriers"]}
    assert states["sip1"]["state"] == "registered" and "403" in states["sipbad"]["reason"]
    assert password not in str(health)

    caller = Phone(tmp_path / "caller", CALLER_ACCOUNT, registrar.accounts[CALLER_ACCOUNT], registrar.port).start()
    phones.append(caller)
    since = caller.dial(CALLED)
    assert caller.wait_event("CALL_ESTABLISHED", 25, since), caller.events[-6:]
    call = until(lambda: Call.objects.filter(to_e164=CALLED).first(), 10)
    assert call is not None
    # The disclosure first: the transcript's first line is the assistant's, before the caller said anything.
    assert caller.wait_far_end_quiet(40), "the agent's opening was not heard"
    assert not call.transcript_entries.filter(role="user").exists()
    question = spoken(ASKED, PCM8K)
    caller.play(numpy.frombuffer(question, dtype="<i2"))
    assert until(lambda: call.transcript_entries.filter(role="user").exists(), 60)
    caller.send_dtmf("1#")
    until(lambda: call.transcript_entries.filter(text__contains="DTMF #").exists(), 10)
    caller.hang_up(since)

    ended = until(lambda: (c := Call.objects.with_transcript().get(pk=call.pk)).ended_at and c, 30)
    assert ended, "the call was not booked"
    lines = [(entry.role, entry.text) for entry in ended.transcript_entries.all()]
    assert lines[0][0] == "assistant" and lines[0][1].startswith(tenant_a.disclosure_text.strip())
    assert ("system", "DTMF 1") in lines and ("system", "DTMF #") in lines
    assert (ended.status, ended.disclosed, ended.from_e164, ended.to_e164, ended.carrier_id) == (
        "completed", True, CALLER_E164, CALLED, "sip1")
    assert ended.seconds > 0
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.calls, counter.seconds, counter.reserved_minutes) == (1, ended.seconds, 0)
    heard, rate = caller.heard()
    assert active_windows(heard, rate).sum() > 50  # over a second of the agent's voice heard
    invite_ok = [m for m in registrar.messages() if m.direction == "rcv" and m.status == 200
                 and m.cseq_method == "INVITE"]
    assert invite_ok and "m=audio" in invite_ok[0].text and "RTP/AVP 8" in invite_ok[0].text  # PCMA

    # Wrong password: one challenge and one refusal, then the backoff (no hot loop).
    bad_registers = [m for m in registrar.messages() if m.direction == "rcv" and m.method == "REGISTER"
                     and "stimmbad" in m.header("To")]
    assert 1 <= len(bad_registers) <= 2

    # sip_check asks the trunk itself and prints its answers.
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("sip_check", "sipbad", stdout=out)
    assert "REGISTER: 403 Forbidden" in out.getvalue() and "OPTIONS: 200" in out.getvalue()

    # A number nobody has: 404, nothing booked.
    count = Call.objects.count()
    since = caller.dial(UNKNOWN)
    closed = caller.wait_event("CALL_CLOSED", 15, since)
    assert closed and "404" in str(closed.get("param")), closed
    assert Call.objects.count() == count

    # Hostile datagrams, then the agent still answers OPTIONS.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for payload in (os.urandom(700), b"INVITE sip:x SIP/2.0\r\n\r\n", b"SIP/2.0 200 OK\r\n\r\n",
                        b"OPTIONS sip:a@127.0.0.1 SIP/2.0\r\nVia: " + b"A" * 60000 + b"\r\n\r\n"):
            sock.sendto(payload, ("127.0.0.1", agent.port))
    with socket.create_connection(("127.0.0.1", agent.port), timeout=3) as tcp:
        tcp.sendall(b"INVITE sip:x SIP/2.0\r\nContent-Length: 100000000\r\n\r\n" + b"v" * 1000)
    assert until(lambda: options_ping(agent.port) == 200, 5)


def test_a_transfer_is_a_refer_the_caller_follows_and_the_call_keeps_its_note(trunk, tmp_path, tenant_a):
    from agent_app.phone import transfer_to

    registrar, agent, password, phones = trunk
    answering(trunk, tenant_a)
    human = Phone(tmp_path / "human", "human", registrar.accounts["human"], registrar.port).start()
    caller = Phone(tmp_path / "caller", CALLER_ACCOUNT, registrar.accounts[CALLER_ACCOUNT], registrar.port).start()
    phones += [human, caller]
    since = caller.dial(CALLED)
    assert caller.wait_event("CALL_ESTABLISHED", 25, since)
    call = until(lambda: Call.objects.filter(to_e164=CALLED).first(), 10)
    handed = asyncio.run_coroutine_threadsafe(transfer_to(call.id, PERSON), agent.loop)
    ringing = human.wait_event("CALL_INCOMING", 20)
    assert ringing, human.events[-5:]
    human.command("accept")
    assert handed.result(30) is True
    refers = until(lambda: [m for m in registrar.messages() if m.direction == "rcv" and m.method == "REFER"], 10)
    assert refers and refers[0].header("Refer-To") == f"<sip:{PERSON}@127.0.0.1:{registrar.port}>"
    ended = until(lambda: (c := Call.objects.with_transcript().get(pk=call.pk)).ended_at and c, 20)
    assert ended and ended.transferred_to == PERSON
    assert any("Weitergeleitet an" in entry.text for entry in ended.transcript_entries.all())
    assert UsageCounter.objects.get(tenant=tenant_a).calls == 1


def test_a_callback_dials_through_the_trunk_once_and_busy_ends_it_as_twilio_s(trunk, tmp_path, tenant_a, api_a,
                                                                               settings):
    registrar, agent, password, phones = trunk
    settings.VOICE_OUTBOUND_CARRIER = "sip1"
    settings.VOICE_CALL_DEDUP_WINDOW_SEC = 0  # the second callback below is a new one
    number_create(tenant=tenant_a, e164=CALLED)
    carrier_create(carrier_id="sip1", kind="sip", credentials={
        "registrar": f"sip:127.0.0.1:{registrar.port}", "username": "stimmwerk", "password": password})
    assert until(lambda: (r := registered("sip1")) is not None and r.state == "registered", 30)
    human = Phone(tmp_path / "human", "human", registrar.accounts["human"], registrar.port).start()
    phones.append(human)

    response = api_a.post("/voice/v1/calls", {"to": PERSON}, format="json")
    assert response.status_code == 201, response.content
    call_id = response.json()["id"]
    ringing = human.wait_event("CALL_INCOMING", 20)
    assert ringing, human.events[-5:]
    since = human.events.index(ringing)
    human.command("accept")
    assert human.wait_event("CALL_ESTABLISHED", 10, since)
    assert human.wait_far_end_quiet(40), "the agent's opening was not heard"
    human.hang_up(since)
    ended = until(lambda: (c := Call.objects.with_transcript().get(pk=call_id)).ended_at and c, 20)
    assert ended and (ended.status, ended.direction, ended.to_e164, ended.carrier_id) == (
        "completed", "outbound", PERSON, "sip1")
    assert ended.seconds > 0 and ended.disclosed
    invites = [m for m in registrar.messages() if m.direction == "rcv" and m.method == "INVITE"
               and PERSON in m.first_line]
    assert len({m.header("Call-ID") for m in invites}) == 1  # one dial, its challenge answered in the same call
    assert "stimmwerk@" in invites[-1].header("From") and CALLED in invites[-1].header("P-Preferred-Identity")
    assert "PCMA" in invites[-1].text.split("m=audio", 1)[1].split("\n", 2)[1]  # PCMA first in the offer

    # Busy: the callee's side refuses; the call ends as Twilio's busy, booked with nothing.
    response = api_a.post("/voice/v1/calls", {"to": PERSON}, format="json")
    assert response.status_code == 201, response.content
    second = response.json()["id"]
    ringing = human.wait_event("CALL_INCOMING", 20, since + 1)
    assert ringing
    human.command("hangup")
    busy = until(lambda: (c := Call.objects.get(pk=second)).ended_at and c, 20)
    assert busy and (busy.status, busy.seconds) == ("busy", 0), busy and busy.status
    counter = UsageCounter.objects.get(tenant=tenant_a)
    assert (counter.seconds, counter.reserved_minutes) == (ended.seconds, 0)


@pytest.fixture
def static_trunk(transactional_db, settings, tenant_a):
    """The agent alone, with a static trunk allowed from loopback (no registrar)."""
    from tests.sip.raw import Trunk

    settings.SIP_RELOAD_SEC = 0.5
    settings.SIP_RTP_TIMEOUT_SEC = 2
    number_create(tenant=tenant_a, e164=CALLED)
    carrier_create(carrier_id="trunk1", kind="sip", credentials={"static": "1", "allow": "127.0.0.1"})
    agent = AgentThread()
    assert until(lambda: (r := registered("trunk1")) is not None and r.state == "static", 15)
    trunk = Trunk(agent.port)
    rtp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rtp.bind(("127.0.0.1", 0))
    yield agent, trunk, rtp
    rtp.close()
    trunk.close()
    agent.stop()


def test_a_static_trunk_s_refusals_cancel_and_dead_rtp(static_trunk, tenant_a):
    from tests.sip.raw import header

    agent, trunk, rtp = static_trunk
    port = rtp.getsockname()[1]
    # No common codec: 488; a number nobody has: 404; neither books anything.
    call_id, _ = trunk.invite(CALLED, port, formats="18")
    assert trunk.final(call_id) == 488
    call_id, _ = trunk.invite(UNKNOWN, port)
    assert trunk.final(call_id) == 404
    # An absurd SDP port: 488.
    call_id, _ = trunk.invite(CALLED, 99999)
    assert trunk.final(call_id) == 488
    # A CANCEL right behind the INVITE: 487, nothing booked.
    call_id, branch = trunk.invite(CALLED, port)
    trunk.request("CANCEL", CALLED, call_id, branch=branch)
    assert trunk.final(call_id) == 487
    assert not Call.objects.exists()

    # Answered, then no RTP from the trunk: the agent's RTP arrives, then its BYE after
    # SIP_RTP_TIMEOUT_SEC, and the call is booked once.
    call_id, _ = trunk.invite(CALLED, port)
    ok = trunk.receive(10, lambda t: call_id in t and t.startswith("SIP/2.0 200"))
    assert ok and "a=rtpmap:8 PCMA/8000" in ok and "m=audio" in ok
    to_tag = header(ok, "To").split("tag=")[1]
    trunk.request("ACK", CALLED, call_id, to_tag=to_tag)
    rtp.settimeout(5)
    packet, agent_rtp = rtp.recvfrom(2048)
    assert packet[1] & 0x7F == 8 and len(packet) == 12 + 160  # PCMA, 20 ms
    # One packet of the negotiated peer, then a stranger's stream: ignored (it neither
    # draws our audio nor keeps the call alive).
    rtp.sendto(bytes([0x80, 8, 0, 1, 0, 0, 0, 160, 0, 0, 0, 7]) + b"\xd5" * 160, agent_rtp)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stranger:
        stranger.bind(("127.0.0.1", 0))
        stranger.settimeout(0.5)
        for seq in range(2, 60):
            stranger.sendto(bytes([0x80, 8, 0, seq, 0, 0, seq, 0, 0, 0, 0, 9]) + b"\x55" * 160, agent_rtp)
        with pytest.raises(TimeoutError):
            stranger.recv(2048)
    bye = trunk.receive(15, lambda t: call_id in t and t.startswith("BYE "))
    assert bye is not None
    call = until(lambda: (c := Call.objects.get()).ended_at and c, 15)
    assert call and call.status == "completed" and call.carrier_id == "trunk1" and call.from_e164 == CALLER_E164
    assert UsageCounter.objects.get(tenant=tenant_a).calls == 1

    # A flood of INVITEs from one address: past SIP_INVITES_PER_SEC they get 503.
    flood = {trunk.invite(UNKNOWN, port)[0] for _ in range(30)}
    answers: dict[str, int] = {}

    def final_answer(text: str) -> bool:
        flood_id = header(text, "Call-ID")
        if flood_id in flood and text.startswith("SIP/2.0") and not text.startswith("SIP/2.0 100"):
            answers[flood_id] = int(text.split(" ")[1])
        return len(answers) == len(flood)

    trunk.receive(10, final_answer)
    assert set(answers) == flood and {404, 503} == set(answers.values()), answers
    assert Call.objects.count() == 1


@pytest.mark.parametrize("codecs, payload_type", [(("PCMU",), 0), (("G722",), 9)], ids=["PCMU only", "G.722 only"])
def test_pcmu_alone_and_g722_where_offered_are_answered_and_heard(trunk, tmp_path, tenant_a, codecs, payload_type):
    registrar, agent, password, phones = trunk
    answering(trunk, tenant_a)
    caller = Phone(tmp_path / "caller", CALLER_ACCOUNT, registrar.accounts[CALLER_ACCOUNT], registrar.port,
                   codecs=codecs).start()
    phones.append(caller)
    since = caller.dial(CALLED)
    assert caller.wait_event("CALL_ESTABLISHED", 25, since)
    assert caller.wait_far_end_quiet(40), "the agent's opening was not heard"
    caller.hang_up(since)
    answer = [m for m in registrar.messages() if m.direction == "rcv" and m.status == 200 and m.cseq_method == "INVITE"]
    assert answer and f"RTP/AVP {payload_type} " in answer[0].text
    ended = until(lambda: (c := Call.objects.get()).ended_at and c, 20)
    assert ended and ended.status == "completed" and ended.seconds > 0 and ended.disclosed


def test_a_call_heard_by_deepgram_and_spoken_by_azure_in_its_a_law_unconverted(
        trunk, tmp_path, tenant_a, api_a, speech_server, settings):
    """Issue 36's whole phone call on the SIP path: the phone's PCMA goes to the fake
    Deepgram as A-law and the fake Azure is asked for A-law, whose bytes the phone hears
    as they came; the caller's words are Deepgram's, the local recogniser never asked."""
    from tests.agent_app.test_speech_failover import _configure
    from tests.agent_app.test_streaming_voice import TRANSCRIBER, VOICE

    registrar, _agent, _password, phones = trunk
    with FakeAzureTts(chunks=8, chunk_bytes=800, audible=True) as azure, \
            FakeDeepgram(utterances=[ASKED], by_energy=True) as deepgram:
        local = _configure(settings, speech_server, azure=azure, deepgram=deepgram)
        assert api_a.post("/v2/assistants", {"name": "Empfang", "voice": VOICE, "transcriber": TRANSCRIBER},
                          format="json").status_code == 201
        answering(trunk, tenant_a)
        caller = Phone(tmp_path / "caller", CALLER_ACCOUNT, registrar.accounts[CALLER_ACCOUNT], registrar.port).start()
        phones.append(caller)
        since = caller.dial(CALLED)
        assert caller.wait_event("CALL_ESTABLISHED", 25, since), caller.events[-6:]
        call = until(lambda: Call.objects.filter(to_e164=CALLED).first(), 10)
        assert call is not None
        assert caller.wait_far_end_quiet(40), "the agent's opening was not heard"
        # A-law's own levels: any encoder (the phone's is not ours) makes exactly these bytes of them.
        question = alaw_encode(numpy.frombuffer(spoken(ASKED, PCM8K), dtype="<i2"))
        answered_from = len(caller.heard_so_far())
        caller.play(alaw_decode(question))
        assert until(lambda: call.transcript_entries.filter(role="user").exists(), 30)
        assert caller.wait_far_end_quiet(40, since=answered_from), "the agent's answer was not heard"
        caller.hang_up(since)
        assert deepgram.connections and deepgram.connections[0].closed.wait(10)
        ended = until(lambda: (c := Call.objects.with_transcript().get(pk=call.pk)).ended_at and c, 30)
    assert ended, "the call was not booked"
    connection = deepgram.connections[0]
    assert (connection.param("encoding"), connection.param("sample_rate")) == ("alaw", "8000")
    assert question in bytes(connection.audio)  # the phone's bytes, in order, unconverted
    assert len(azure.requests) >= 3  # the disclosure, the greeting, the answer
    assert {request.output_format for request in azure.requests} == {"raw-8khz-8bit-mono-alaw"}
    heard, _rate = caller.heard()
    assert alaw_decode(tone_of("raw-8khz-8bit-mono-alaw", 800)).astype("<i2").tobytes() in heard.astype("<i2").tobytes()
    assert local.requests == []
    lines = [(entry.role, entry.text) for entry in ended.transcript_entries.all()]
    assert lines[0][0] == "assistant" and lines[0][1].startswith(tenant_a.disclosure_text.strip())
    assert ("user", ASKED) in lines and not [text for role, text in lines if role == "system" and "ausgefallen" in text]
    invite_ok = [m for m in registrar.messages() if m.direction == "rcv" and m.status == 200
                 and m.cseq_method == "INVITE"]
    assert invite_ok and "RTP/AVP 8" in invite_ok[0].text  # PCMA


def test_tcp_answers_a_whole_message_and_closes_a_silent_or_garbage_connection(transactional_db, monkeypatch):
    import agent_app.sip.agent as sip_agent

    monkeypatch.setattr(sip_agent, "TCP_IDLE_SEC", 1.0)
    agent = AgentThread()
    try:
        with socket.create_connection(("127.0.0.1", agent.port), timeout=5) as tcp:
            local = tcp.getsockname()[1]
            tcp.sendall((f"OPTIONS sip:a@127.0.0.1:{agent.port} SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:{local};"
                         "branch=z9hG4bKtcp1\r\nFrom: <sip:x@127.0.0.1>;tag=1\r\nTo: <sip:a@127.0.0.1>\r\n"
                         "Call-ID: tcp1\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n").encode())
            assert tcp.recv(4096).startswith(b"SIP/2.0 200")
        for payload in (b"INVITE sip:x SIP/2.0\r\nVia: SIP/2.0/TCP 1.2.3.4", os.urandom(70000),
                        b"INVITE sip:x SIP/2.0\r\nContent-Length: 100000000\r\n\r\n" + b"v" * 1000):
            with socket.create_connection(("127.0.0.1", agent.port), timeout=10) as tcp:
                began = time.monotonic()
                with contextlib.suppress(ConnectionError):
                    tcp.sendall(payload)
                    while tcp.recv(4096):  # until the agent closes it
                        pass
                assert time.monotonic() - began < 8
    finally:
        agent.stop()


def sipsak(*args: str) -> subprocess.CompletedProcess[str]:
    """Runs sipsak; an INVITE's retransmissions end after 4 x T1 (2 s), not 64 x T1."""
    return subprocess.run(["sipsak", "-D", "4", *args], capture_output=True, text=True, errors="replace", timeout=120)


def sipsak_status(done: subprocess.CompletedProcess[str]) -> int | None:
    """The status of the last final reply sipsak printed (with -vv), or None."""
    found = re.findall(r"^\s+SIP/2\.0 ([2-6]\d\d)", done.stdout, re.M)
    return int(found[-1]) if found else None


def request_file(path, method: str, user: str, agent_port: int, *, body: str = "") -> str:
    """A request for `sipsak -f` (sipsak adds its Via), written to `path`."""
    text = (f"{method} sip:{user}@127.0.0.1:{agent_port} SIP/2.0\r\nFrom: <sip:{CALLER_ACCOUNT}@127.0.0.1>;tag=sk\r\n"
            f"To: <sip:{user}@127.0.0.1>\r\nCall-ID: {uuid.uuid4().hex}@sipsak\r\nCSeq: 1 {method}\r\n"
            "Contact: <sip:sipsak@127.0.0.1>\r\nMax-Forwards: 70\r\n"
            + ("Content-Type: application/sdp\r\n" if body else "")
            + f"Content-Length: {len(body.encode())}\r\n\r\n{body}")
    path.write_text(text)
    return str(path)


def test_sipsak_s_ping_malformed_requests_flood_and_random_traces_leave_a_phone_s_call_answered(
        trunk, tmp_path, tenant_a, caplog):
    registrar, agent, password, phones = trunk
    number_create(tenant=tenant_a, e164=CALLED)
    carrier_create(carrier_id="sip1", kind="sip", credentials={
        "registrar": f"sip:127.0.0.1:{registrar.port}", "username": "stimmwerk", "password": password})
    assert until(lambda: (r := registered("sip1")) is not None and r.state == "registered", 30)
    target = f"sip:{CALLED}@127.0.0.1:{agent.port}"
    caplog.set_level(logging.WARNING)

    # sipsak's OPTIONS ping, over UDP and TCP: 200 with what we allow.
    for transport in ("udp", "tcp"):
        ping = sipsak("-vv", "-E", transport, "-s", f"sip:127.0.0.1:{agent.port}")
        assert ping.returncode == 0 and sipsak_status(ping) == 200, ping.stdout[-600:]
        assert re.search(r"^Allow: .*INVITE", ping.stdout, re.M)

    # Malformed and unwelcome requests from the carrier's address, each answered (an
    # unanswered INVITE would be retransmitted for half a minute): an SDP aiosipua's
    # parser raises on and an INVITE without any are 488, requests for no dialog 481,
    # methods we do not serve 405, a Request-URI that is no number 404.
    cases = {
        "INVITE, unparseable SDP": ("INVITE", CALLED, "v=0\r\nm=audio x RTP/AVP zz\r\nc=IN IP4 ::::\r\n", 488),
        "INVITE, no SDP": ("INVITE", CALLED, "", 488),
        "INVITE, no number": ("INVITE", "%00%ff';--", "v=0\r\n", 404),
        "BYE of no call": ("BYE", CALLED, "", 481),
        "INFO of no call": ("INFO", CALLED, "", 481),
        "CANCEL of no INVITE": ("CANCEL", CALLED, "", 481),
        "REGISTER": ("REGISTER", CALLED, "", 405),
        "MESSAGE": ("MESSAGE", CALLED, "", 405),
        "an unknown method": ("FROBNICATE", CALLED, "", 405),
    }
    answered = {name: sipsak_status(sipsak("-vv", "-f", request_file(tmp_path / "request.sip", method, user,
                                                                     agent.port, body=body), "-s", target))
                for name, (method, user, body, _status) in cases.items()}
    assert answered == {name: status for name, (*_, status) in cases.items()}
    assert not Call.objects.exists()

    # A flood: 20,000 OPTIONS as fast as sipsak sends them. Past SIP_MESSAGES_PER_SEC they
    # are dropped, and logged as a count (a few lines, not a line a datagram); the agent
    # answers again as soon as the source's budget refills.
    flood = sipsak("-F", "-e", "20000", "-s", f"sip:127.0.0.1:{agent.port}")
    assert flood.returncode == 0, flood.stderr
    assert until(lambda: options_ping(agent.port) == 200, 10)
    drops = [r.getMessage() for r in caplog.records if "dropped: messages over" in r.getMessage()]
    assert drops and len(drops) <= 5, drops
    assert until(lambda: sum(int(m.split()[1]) for m in caplog.messages if "dropped: messages over" in m) > 1000, 5)

    # Random traces: sipsak garbles its OPTIONS more with each answer, until one goes
    # unanswered (the agent drops what does not parse: sipsak's exit 3 after three
    # sends). Nothing fails inside the agent.
    for _ in range(5):
        trace = sipsak("-R", "-s", f"sip:127.0.0.1:{agent.port}")
        assert trace.returncode == 3 and "three times without getting a response" in trace.stdout, trace.stderr
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert not failures, [r.getMessage() for r in failures]

    # After all that, a phone's call through the trunk is answered and booked once.
    assert until(lambda: options_ping(agent.port) == 200, 10)
    caller = Phone(tmp_path / "caller", CALLER_ACCOUNT, registrar.accounts[CALLER_ACCOUNT], registrar.port).start()
    phones.append(caller)
    since = caller.dial(CALLED)
    assert caller.wait_event("CALL_ESTABLISHED", 25, since), caller.events[-6:]
    assert caller.wait_far_end_quiet(40), "the agent's opening was not heard"
    caller.hang_up(since)
    ended = until(lambda: (c := Call.objects.get()).ended_at and c, 20)
    assert ended and ended.status == "completed" and ended.disclosed and ended.seconds > 0
    assert UsageCounter.objects.get(tenant=tenant_a).calls == 1
