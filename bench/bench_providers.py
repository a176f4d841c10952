"""Phone calls heard and spoken by speech providers (issue 36), on the Twilio path.

The same carrier as bench_phone (uvicorn serving console.asgi; the caller is a websockets
client playing Twilio's Media Streams with German μ-law speech at real time): end of
the caller's speech (the clip's last voiced 20 ms, not the end of its trailing quiet)
→ the reply's first `media` message, p50/p95 over the turns,
(a) with the local engines (Whisper base, eSpeak NG) and (b) with an assistant whose
transcriber is Deepgram and whose voice is Azure — both fakes on loopback (tests/) with
the vendors' typical delays: Deepgram's final result `DEEPGRAM_FINAL_SEC` after the end
of speech (in the audio's time), Azure's first byte `AZURE_FIRST_BYTE_SEC` after the
request. Our own share is the measured figure minus those configured delays (goal:
p50 ≤ 0.2 s). The chat lane is the gateway's mock in both. (c) an assistant in realtime
mode whose lane is a fake OpenAI Realtime server on loopback (tests/): its own turn
detection (server VAD) ends the turn after the `silence_duration_ms` we configure of
quiet audio, and its first audio delta comes `REALTIME_FIRST_AUDIO_SEC` after that; both
are the vendor's delays, the rest (the bridge, the pacing, the carrier) is ours.

Row (b) on the SIP path too: a baresip phone calls the same assistant's number through
kamailio and `manage.py sip_agent` answers in PCMA (A-law to Deepgram, A-law from Azure,
unconverted), measured as bench_sip measures: in the caller's own recording, end of its
speech → onset of the agent's voice (the fake Azure speaks a tone, so there is one to
hear); the RTP path both ways is in that figure. Beside it the same turns as the server
measured them (`turn.latency`, stored per reply): from the arrival of the caller's last
voiced frame to the reply's first audio handed to RTP.

Failover: a third server whose Azure hangs after the first piece of every sentence
(GATEWAY_COOLDOWN_SEC=0, so each reply's first sentence meets it again): the longest
silence within each reply as the caller receives it (goal: ≤ 1.5 s); and calls whose
Deepgram dies after a second of the caller's speech: end of speech → first audio.
"""
import asyncio
import contextlib
import json
import statistics
import uuid

from bench.bench_agent import SENTENCES, _percentile, _served
from bench.bench_phone import ACCOUNT, CALLED, TOKEN, _call, phone_setup
from bench.bench_sip import _agent
from bench.bench_sip import _call as _sip_call
from bench.harness import HOST, create_tenant_with_key, sized, stop, temp_project

TURNS, CALL_TURNS, FAILOVER_CALLS = 20, 5, 5
DEEPGRAM_FINAL_SEC, AZURE_FIRST_BYTE_SEC = 0.15, 0.15
REALTIME_FIRST_AUDIO_SEC = 0.3
CALLED_PROVIDERS, CALLED_REALTIME = "+4930555000222", "+4930555000333"
VOICE, TRANSCRIBER, REALTIME_LANE = "tts-azure-de:de-DE-KatjaNeural", "stt-deepgram", "voice-agent-realtime"
REALTIME_REPLY = "Sehr gern, das habe ich für Sie notiert."

_ASSISTANT = """
from console.assistants.services import assistant_create
from console.numbers.models import PhoneNumber
from console.numbers.services import number_create
from console.tenants.models import Tenant
from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.services import registry_load
import json
registry_load(document=json.loads(SHIPPED_DOCUMENT.read_text()), loaded_by="bench")
tenant = Tenant.objects.get(slug="bench")
assistant = assistant_create(tenant=tenant, data={{"name": "Anbieter", "voice": {voice!r},
                                                   "transcriber": {{"lane": {lane!r}, "keyterms": ["Termin"]}}}})
number_create(tenant=tenant, e164={called!r}, assistant_id=str(assistant.pk))
realtime = assistant_create(tenant=tenant, data={{"name": "Echtzeit", "mode": "realtime",
                                                  "realtime": {{"lane": {realtime_lane!r}}}}})
number_create(tenant=tenant, e164={realtime_called!r}, assistant_id=str(realtime.pk))
# The local number gets an assistant of its own without speech lanes: a number without one
# would answer with the tenant's assistant, the one above.
local = assistant_create(tenant=tenant, data={{"name": "Lokal"}})
PhoneNumber.objects.filter(tenant=tenant, e164={local_called!r}).update(assistant=local)
"""


def _env(deepgram, azure, realtime=None, **extra):
    from registry_app.lanes.config import lane_variable

    lanes = [("stt-deepgram", deepgram), ("tts-azure-de", azure)] + ([(REALTIME_LANE, realtime)] if realtime else [])
    return {**{lane_variable(lane, "ENDPOINT"): fake.base_url for lane, fake in lanes},
            **{lane_variable(lane, "KEY"): fake.key for lane, fake in lanes}, **extra}


def _quiet_tails(speeches):
    """Seconds of quiet at the end of each μ-law clip (eSpeak's trailing silence)."""
    import audioop  # the stdlib's G.711 (deprecated; a benchmark's only use)

    tails = []
    for clip in speeches:
        frames = [clip[offset:offset + 160] for offset in range(0, len(clip), 160)]
        loud = [index for index, frame in enumerate(frames) if audioop.rms(audioop.ulaw2lin(frame, 2), 2) > 300]
        tails.append((len(frames) - 1 - loud[-1]) * 0.02 if loud else 0.0)
    return tails


def _from_voice_end(latencies, tails):
    """Each turn's latency from the end of the caller's voice (turn n of a call spoke clip n)."""
    return [value + tails[turn % len(tails)] for turn, value in enumerate(latencies)]


_SERVER_TURNS = """
import json
from calls_app.models import Call, TurnLatency
calls = list(Call.objects.filter(carrier_id={carrier!r}).order_by("created_at", "id").values_list("pk", flat=True))
print(json.dumps([turn.total_ms / 1000 for turn in TurnLatency.objects.filter(call_id__in=calls[1:])]))
"""


def _server_turns(project, carrier):
    """The server's own figure of each turn of the carrier's calls but the first (the
    warm-up): `turn.latency`'s total, from the arrival of the caller's last voiced frame
    to the reply's first audio handed to the transport — without the RTP paths."""
    return json.loads(project.django(_SERVER_TURNS.format(carrier=carrier)).strip().splitlines()[-1])


def _sip_turns(project, speeches, env):
    """`TURNS` turns of a SIP call (PCMA) to the providers' assistant, from the caller's recording."""
    from agent_app.audio import mulaw_decode
    from tests.sip.baresip import Phone
    from tests.sip.kamailio import Kamailio

    accounts = {"stimmwerk": "Sw" + uuid.uuid4().hex[:12], "caller": "Ca" + uuid.uuid4().hex[:12]}
    registrar = Kamailio(project.tmp / "kam", accounts, {CALLED_PROVIDERS: "stimmwerk"}).start()
    agent = phone = None
    try:
        project.manage("create_carrier", "sip1", "--kind", "sip", "--registrar", f"sip:{HOST}:{registrar.port}",
                       "--username", "stimmwerk", "--password", accounts["stimmwerk"])
        agent = _agent(project, registrar, **env)
        phone = Phone(project.tmp / "phone", "caller", accounts["caller"], registrar.port).start()
        clips = [mulaw_decode(clip) for clip in speeches]  # the same speech, as the phone plays it
        _sip_call(phone, clips, 1, called=CALLED_PROVIDERS)  # the agent process's first call (not counted)
        return _sip_call(phone, clips, sized(TURNS), called=CALLED_PROVIDERS)
    finally:
        if phone is not None:
            phone.stop()
        if agent is not None:
            stop(agent)
        registrar.stop()


def _serving(stack, project, **env):
    """A server of `project` with `env`, stopped when `stack` unwinds; its base URL."""
    server, base, _log = _served(project, **env)
    stack.callback(stop, server)
    return base


def _row(label, samples, delays=0.0, goal=""):
    row = {"path": label, "turns": len(samples), "p50 s": round(statistics.median(samples), 2),
           "p95 s": round(_percentile(samples, 0.95), 2), "max s": round(max(samples), 2),
           "vendor delays s": delays, "own p50 s": round(statistics.median(samples) - delays, 2),
           "own p95 s": round(_percentile(samples, 0.95) - delays, 2), "goal": goal}
    print(row, flush=True)
    return row


def provider_latency(load):
    """Phone (Twilio, μ-law): end of speech → first agent audio with the local engines, with fake Deepgram + fake Azure (150 ms each) and in realtime mode (fake OpenAI Realtime), and a failover's dead air"""
    from speech_app.providers.openai_realtime import SILENCE_MS
    from tests.azure_tts_fake import FakeAzureTts
    from tests.deepgram_fake import FakeDeepgram
    from tests.openai_realtime_fake import FakeRealtime

    fakes = [FakeDeepgram(utterances=SENTENCES, by_energy=True, final_delay=DEEPGRAM_FINAL_SEC),
             # Audible: the SIP caller's recording must hear the agent's voice begin.
             FakeAzureTts(chunks=8, chunk_bytes=800, first_byte_delay=AZURE_FIRST_BYTE_SEC, audible=True),
             FakeDeepgram(utterances=SENTENCES, by_energy=True, final_delay=DEEPGRAM_FINAL_SEC, kill_after=1.0),
             FakeAzureTts(chunks=8, chunk_bytes=800, fail_from=0, failure="stall"),
             # Each call's turns say the clips in order (turn n clip n), as `_call` plays them.
             FakeRealtime(heard=[SENTENCES[turn % len(SENTENCES)] for turn in range(CALL_TURNS)] * (TURNS // CALL_TURNS),
                          replies=[{"say": REALTIME_REPLY}] * TURNS,
                          response_delay=REALTIME_FIRST_AUDIO_SEC)]
    rows = []
    # Unwound in reverse: the servers stop before their project's directory is removed
    # (a server still booking a call would write into it), then the fakes.
    with contextlib.ExitStack() as stack:
        deepgram, azure, dying_deepgram, hanging_azure, realtime = [stack.enter_context(fake) for fake in fakes]
        project = stack.enter_context(temp_project())
        create_tenant_with_key(project, "bench")
        project.manage("create_carrier", "tw1", "--kind", "twilio", "--account-sid", ACCOUNT, "--auth-token", TOKEN)
        speeches = phone_setup(project)
        project.django(_ASSISTANT.format(voice=VOICE, lane=TRANSCRIBER, called=CALLED_PROVIDERS, local_called=CALLED,
                                         realtime_lane=REALTIME_LANE, realtime_called=CALLED_REALTIME))
        tails = _quiet_tails(speeches)
        print(f"quiet at the clips' ends: {tails} s", flush=True)
        base = _serving(stack, project, **_env(deepgram, azure, realtime))
        asyncio.run(_call(base, speeches, 1))  # loads the recogniser and the end-of-turn model (not counted)
        local, providers, realtimes = [], [], []
        for _ in range(sized(TURNS // CALL_TURNS)):  # interleaved: a busy machine's load falls on all alike
            local += _from_voice_end(asyncio.run(_call(base, speeches, sized(CALL_TURNS))), tails)
            providers += _from_voice_end(asyncio.run(_call(base, speeches, sized(CALL_TURNS), called=CALLED_PROVIDERS)),
                                         tails)
            realtimes += _from_voice_end(asyncio.run(_call(base, speeches, sized(CALL_TURNS), called=CALLED_REALTIME)),
                                         tails)
        rows.append(_row("local engines (Whisper base, eSpeak NG)", local))
        rows.append(_row("fake Deepgram + fake Azure", providers, DEEPGRAM_FINAL_SEC + AZURE_FIRST_BYTE_SEC,
                         "own p50 ≤ 0.2 s"))
        assert not realtime.problems and all(not c.errors for c in realtime.connections), realtime.problems
        rows.append(_row("realtime mode (fake OpenAI Realtime)", realtimes,
                         round(SILENCE_MS / 1000 + REALTIME_FIRST_AUDIO_SEC, 2), "own p50 ≤ 0.2 s"))
        rows.append(_row("SIP (PCMA): fake Deepgram + fake Azure, in the caller's recording",
                         _sip_turns(project, speeches, _env(deepgram, azure)),
                         DEEPGRAM_FINAL_SEC + AZURE_FIRST_BYTE_SEC, "own p50 ≤ 0.2 s"))
        rows.append(_row("SIP (PCMA): the same turns as the server measured them (no RTP path)",
                         _server_turns(project, "sip1"), DEEPGRAM_FINAL_SEC + AZURE_FIRST_BYTE_SEC))
        failing = _serving(stack, project, **_env(dying_deepgram, hanging_azure, GATEWAY_COOLDOWN_SEC="0"))
        dead_airs = []
        asyncio.run(_call(failing, speeches, sized(TURNS), called=CALLED_PROVIDERS, dead_airs=dead_airs))
        rows.append(_row("failover: Azure hangs after its first piece (dead air within the reply)", dead_airs,
                         goal="≤ 1.5 s"))
        killed = []
        for _ in range(sized(FAILOVER_CALLS)):
            killed += _from_voice_end(asyncio.run(_call(failing, speeches, 1, called=CALLED_PROVIDERS)), tails)
        rows.append(_row("failover: Deepgram dies after 1 s of speech (end of speech → first audio)", killed))
    return rows
