"""Phone calls through a SIP trunk (issue 35): a real SIP phone (baresip) calls the
tenant's number through a carrier-like registrar (kamailio with digest auth), and the
SIP agent (`manage.py sip_agent`) answers. Measured from the caller's own recording, the
way SignalWire measured real phone calls: end of the caller's speech (in what it sent)
→ first onset of the agent's voice (in what it heard), p50/p95 over the turns with the
mock lane; then calls in parallel, one phone each, until that p95 passes 2 s — the
number of simultaneous SIP calls this machine holds.

The caller waits until each reply has been quiet 1.5 s before it speaks again, so the
figure covers end-of-turn detection, recognition (Whisper base), the gateway's mock
lane, synthesis and RTP to the phone."""
import statistics
import subprocess
import sys
import threading
import time
import uuid

from bench.bench_agent import SENTENCES, _percentile
from bench.harness import HOST, ROOT, create_tenant_with_key, sized, temp_project
from tests.sip.baresip import Phone, read_wav, reply_latencies
from tests.sip.kamailio import Kamailio, free_port

CALLED = "+4930555000222"
TURNS = 20
MAX_CALLS, TURNS_PER_CALL, P95_LIMIT = 4, 4, 2.0

_SETUP = """
from console.numbers.services import number_create
from console.tenants.models import Tenant
from speech_app.services import synthesizer_for
from agent_app.audio import resample
import numpy, wave
tenant = Tenant.objects.get(slug="bench")
Tenant.objects.filter(pk=tenant.pk).update(minute_cap=100000, max_call_minutes=10)
number_create(tenant=tenant, e164={called!r})
for index, text in enumerate({sentences!r}):
    speech = synthesizer_for("de").synthesize(text, voice="de+m3")
    samples = numpy.frombuffer(speech.pcm, dtype="<i2")
    at8k = resample(samples, speech.sample_rate, 8000).astype("<i2")
    with wave.open(f"{tmp}/sip{{index}}.wav", "wb") as out:
        out.setnchannels(1); out.setsampwidth(2); out.setframerate(8000); out.writeframes(at8k.tobytes())
"""


def _agent(project, registrar, **extra_env):
    port, rtp = free_port(), free_port()
    # A REGISTER lost while the machine is busy is tried again after 2 s, not the default 30 s.
    env = {**project.env, "SIP_RELOAD_SEC": "0.5", "SIP_RTP_PORTS": f"{rtp}-{rtp + 60}", "SIP_RTP_TIMEOUT_SEC": "30",
           "SIP_REGISTER_BACKOFF_SEC": "2", **extra_env}
    log = open(project.tmp / "sip_agent.log", "w")
    agent = subprocess.Popen([sys.executable, "manage.py", "sip_agent", "--host", HOST, "--port", str(port)],
                             cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(m.status == 200 and m.cseq_method == "REGISTER" for m in registrar.messages() if m.direction == "snd"):
            return agent
        assert agent.poll() is None, (project.tmp / "sip_agent.log").read_text()[-2000:]
        time.sleep(0.3)
    agent.terminate()
    seen = [f"{m.direction} {m.cseq_method} {m.status}" for m in registrar.messages()][-10:]
    raise RuntimeError(f"the SIP agent did not register; the registrar saw {seen}; the agent said:\n"
                       + (project.tmp / "sip_agent.log").read_text()[-2000:])


def _call(phone, speeches, turns, called=CALLED):
    """One call of `turns` utterances to `called`; the latencies read from the caller's recording."""
    since = phone.dial(called)
    assert phone.wait_event("CALL_ESTABLISHED", 30, since), phone.events[-4:]
    assert phone.wait_far_end_quiet(60), "no opening heard"
    for turn in range(turns):
        mark = len(phone.heard_so_far())
        phone.play(speeches[turn % len(speeches)])
        time.sleep(len(speeches[turn % len(speeches)]) / 8000)
        phone.wait_far_end_quiet(60, quiet_sec=1.5, since=mark + 10)
    phone.hang_up(since)
    time.sleep(0.5)  # sndfile closes its dumps at teardown
    sent, heard = phone.recordings()
    found = reply_latencies(sent, heard)
    return [value if value is not None else float("inf") for value in found[-turns:]]


def sip_reply_latency(load):
    """Phone (SIP trunk via kamailio, baresip caller, PCMA): end of speech → first agent audio in the caller's recording"""
    with temp_project() as project:
        create_tenant_with_key(project, "bench")
        project.django(_SETUP.format(called=CALLED, sentences=SENTENCES, tmp=project.tmp))
        speeches = [read_wav(project.tmp / f"sip{index}.wav")[0] for index in range(len(SENTENCES))]
        callers = max(1, sized(MAX_CALLS, 1))
        accounts = {"stimmwerk": "Sw" + uuid.uuid4().hex[:12],
                    **{f"caller{n}": "Ca" + uuid.uuid4().hex[:12] for n in range(callers)}}
        registrar = Kamailio(project.tmp / "kam", accounts, {CALLED: "stimmwerk"}).start()
        phones, agent, rows = [], None, []
        try:
            project.manage("create_carrier", "sip1", "--kind", "sip", "--registrar", f"sip:{HOST}:{registrar.port}",
                           "--username", "stimmwerk", "--password", accounts["stimmwerk"])
            agent = _agent(project, registrar)
            phones = [Phone(project.tmp / f"p{n}", f"caller{n}", accounts[f"caller{n}"], registrar.port).start()
                      for n in range(callers)]
            _call(phones[0], speeches, 1)  # loads the recogniser (not counted)
            rows.append(_row(1, _call(phones[0], speeches, sized(TURNS))))
            for calls in range(2, callers + 1):
                results: list[list[float]] = [[] for _ in range(calls)]

                def run(n, out=results):
                    out[n] = _call(phones[n], speeches, sized(TURNS_PER_CALL))

                threads = [threading.Thread(target=run, args=(n,)) for n in range(calls)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(600)
                rows.append(_row(calls, [value for result in results for value in result]))
                if rows[-1]["p95 s"] > P95_LIMIT:
                    break
        finally:
            for phone in phones:
                phone.stop()
            if agent is not None:
                agent.terminate()
                try:
                    agent.wait(15)
                except subprocess.TimeoutExpired:
                    agent.kill()
            registrar.stop()
        return rows


def _row(calls, samples):
    finite = [value for value in samples if value != float("inf")] or [float("inf")]
    row = {"calls": calls, "turns": len(samples), "answered": len(finite), "p50 s": round(statistics.median(samples), 2),
           "p95 s": round(_percentile(samples, 0.95), 2), "max s": round(max(samples), 2)}
    print(row, flush=True)
    return row
