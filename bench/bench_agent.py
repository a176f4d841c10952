"""The voice agent (issue 17): how long a caller waits from the end of an utterance to
the first byte of the agent's spoken reply, alone and with sessions in parallel.

uvicorn serves console.asgi (HTTP for the grants, the WebSocket for the talk) in a
throwaway project; callers are websockets clients in this process that stream German
speech of the product's own synthesis in real time, 100 ms frames, then 1 s of silence.
"End of utterance" is when the last frame with speech was sent: the figure includes
the ~0.5 s of silence the detector waits for, recognition, the gateway (mock lane) and
synthesis of the reply."""
import asyncio
import json
import statistics
import subprocess
import sys
import time

from bench.harness import HOST, ROOT, create_tenant_with_key, free_port, stop, temp_project, wait_until_up

SENTENCES = [
    "Ich möchte gerne einen Termin für nächste Woche vereinbaren.",
    "Wann haben Sie am Samstag geöffnet?",
    "Können Sie mich bitte morgen zurückrufen?",
    "Was kostet eine Beratung bei Ihnen?",
]
FRAME_SEC, RATE = 0.1, 16000
TURNS = 20
MAX_SESSIONS, TURNS_PER_SESSION, P95_LIMIT = 6, 3, 3.0

_SPEECH = """
import json, sys
from agent_app.audio import WireFormat
from speech_app.services import synthesizer_for
wire = WireFormat("pcm_s16le", 16000)
for index, text in enumerate({sentences!r}):
    speech = synthesizer_for("de").synthesize(text, voice="de")
    open(f"{tmp}/speech{{index}}.pcm", "wb").write(wire.from_pcm(speech.pcm, speech.sample_rate))
"""


def _percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


async def _caller(url, speeches, turns):
    """One session: `turns` utterances; the latency of each reply's first audio byte."""
    from websockets.asyncio.client import connect

    latencies = []
    async with connect(url, max_size=1 << 22, open_timeout=60) as ws:

        async def until(kind):
            while True:
                message = await asyncio.wait_for(ws.recv(), 120)
                if isinstance(message, bytes):
                    if kind == "audio":
                        return time.monotonic()
                    continue
                frame = json.loads(message)
                if frame["type"] == "error":
                    raise Overloaded(frame) if frame["code"] == "stt_busy" else RuntimeError(frame)
                if frame["type"] == kind:
                    return frame

        await until("agent.done")
        size = int(RATE * 2 * FRAME_SEC)
        for turn in range(turns):
            audio = speeches[turn % len(speeches)]
            began = time.monotonic()
            frames = [audio[i:i + size] for i in range(0, len(audio), size)] + [b"\0" * size] * 10
            spoken_end = None
            for index, frame in enumerate(frames):
                await ws.send(frame)
                if index == len(frames) - 11:
                    spoken_end = time.monotonic()
                delay = began + (index + 1) * FRAME_SEC - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            try:
                await until("agent.speaking")
            except Overloaded:  # this turn was never answered: counts as too slow
                latencies.append(float("inf"))
                continue
            latencies.append(await until("audio") - spoken_end)
            await until("agent.done")
        await ws.send('{"type": "end"}')
    return latencies


class Overloaded(Exception):
    """The agent answered stt_busy: recognition did not finish within its deadline."""


def _grant(base, key):
    import urllib.request

    request = urllib.request.Request(f"{base}/api/voice/agent/sessions", data=b"{}", method="POST", headers={
        "Authorization": f"Bearer {key}", "X-Tenant": "bench", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["url"]


def _served(project):
    port = free_port()
    log_path = project.tmp / "uvicorn.log"
    env = {**project.env, "AGENT_SPEECH_LEAD_SEC": "600", "AGENT_WS_URL": f"ws://{HOST}:{port}"}
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "console.asgi:application", "--host", HOST, "--port", str(port),
             "--ws", "websockets-sansio", "--lifespan", "off", "--no-access-log", "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    wait_until_up(f"http://{HOST}:{port}/health", server, log_path, 60)
    return server, f"http://{HOST}:{port}"


def reply_latency(load):
    """Voice agent: end of utterance → first byte of the reply audio (mock lane, Whisper base)"""
    with temp_project() as project:
        key = create_tenant_with_key(project, "bench")
        project.manage("shell", "-c", "from console.tenants.models import Tenant; "
                       "Tenant.objects.filter(slug='bench').update(minute_cap=100000, max_call_minutes=10)")
        project.django(_SPEECH.format(sentences=SENTENCES, tmp=project.tmp))
        speeches = [(project.tmp / f"speech{index}.pcm").read_bytes() for index in range(len(SENTENCES))]
        server, base = _served(project)
        rows = []
        try:
            # A first session loads the recogniser (not counted).
            asyncio.run(_caller(_grant(base, key), speeches, 1))
            alone = asyncio.run(_caller(_grant(base, key), speeches, TURNS))
            rows.append({"sessions": 1, "turns": len(alone), "p50 s": round(statistics.median(alone), 2),
                         "p95 s": round(_percentile(alone, 0.95), 2), "max s": round(max(alone), 2)})
            print(rows[-1], flush=True)
            for sessions in range(2, MAX_SESSIONS + 1):
                async def together(count=sessions):
                    urls = [_grant(base, key) for _ in range(count)]
                    return await asyncio.gather(*(_caller(url, speeches, TURNS_PER_SESSION) for url in urls))

                samples = [value for caller in asyncio.run(together()) for value in caller]
                p95 = _percentile(samples, 0.95)
                rows.append({"sessions": sessions, "turns": len(samples),
                             "p50 s": round(statistics.median(samples), 2), "p95 s": round(p95, 2),
                             "max s": round(max(samples), 2)})
                print(rows[-1], flush=True)
                if p95 > P95_LIMIT:
                    break
        finally:
            stop(server)
        for row in rows:
            row["p50 vs alone"] = round(row["p50 s"] / rows[0]["p50 s"], 2)
        return rows
