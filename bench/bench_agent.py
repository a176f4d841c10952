"""The voice agent (issues 17 and 29): how long a caller waits from the end of an
utterance to the first byte of the agent's spoken reply, alone and with two sessions.

uvicorn serves console.asgi (HTTP for the grants, the WebSocket for the talk) in a
throwaway project; callers are websockets clients in this process that stream German
speech in real time, 100 ms frames, and go on streaming silence as a microphone would
until the reply has been spoken. The speech is what the acceptance probe plays: eSpeak
NG's command line (`de+m3`, 150 words a minute) when it is installed, else the
product's own synthesis. "End of utterance" is when the last frame of the clip was
sent: the figure includes waiting for the end of the turn, recognition, the gateway
(mock lane) and synthesis of the reply's first sentence. The clip ends with eSpeak's
own trailing silence, so the server's own figure (`turn.latency`, from the arrival of
the last voiced frame) is reported beside it ("server p50/p95"), with its stages'
medians."""
import asyncio
import audioop
import io
import json
import shutil
import statistics
import subprocess
import sys
import time
import wave
from pathlib import Path
from typing import Any

from bench.harness import HOST, ROOT, create_tenant_with_key, free_port, sized, stop, temp_project, wait_until_up

EXAMPLES = ROOT.parent / "shared" / "data" / "german-voicemails.example.json"
SENTENCES = [
    "Ich möchte gerne einen Termin für nächste Woche vereinbaren.",
    "Wann haben Sie am Samstag geöffnet?",
    "Können Sie mich bitte morgen zurückrufen?",
    "Was kostet eine Beratung bei Ihnen?",
]
FRAME_SEC, RATE = 0.1, 16000
TURNS_ALONE, TURNS_TOGETHER = 20, 10
STAGES = ("endOfTurnMs", "recognitionMs", "thinkingMs", "synthesisMs")

_SPEECH = """
import json, sys
from agent_app.audio import WireFormat
from speech_app.tts import EspeakSynthesizer
wire = WireFormat("pcm_s16le", 16000)
for index, text in enumerate({sentences!r}):
    speech = EspeakSynthesizer().synthesize(text, voice="de+m3")
    open(f"{tmp}/speech{{index}}.pcm", "wb").write(wire.from_pcm(speech.pcm, speech.sample_rate))
"""


def _percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def sentences():
    """The probe's sentences (the first four German voicemail examples) where they are
    at hand, else our own."""
    if EXAMPLES.exists():
        return json.loads(EXAMPLES.read_text(encoding="utf-8"))[:4]
    return SENTENCES


def speeches(project, texts):
    """(16 kHz PCM per sentence, how it was made)."""
    if shutil.which("espeak-ng"):
        out = []
        for text in texts:
            wav = subprocess.run(["espeak-ng", "-v", "de+m3", "-s", "150", "--stdout", text], capture_output=True,
                                 check=True).stdout
            with wave.open(io.BytesIO(wav)) as clip:
                pcm = clip.readframes(clip.getnframes())
                out.append(audioop.ratecv(pcm, 2, 1, clip.getframerate(), RATE, None)[0])
        return out, "espeak-ng de+m3 at 150 words a minute (the probe's speech)"
    project.django(_SPEECH.format(sentences=texts, tmp=project.tmp))
    return ([(project.tmp / f"speech{index}.pcm").read_bytes() for index in range(len(texts))],
            "the product's synthesis (de+m3)")


async def _caller(url, clips, turns, replies=None):
    """One session: `turns` utterances; per turn (seconds to the first audio, the
    server's turn.latency). The first audio may be the filler ("Einen Moment, bitte.")
    of a reply that took long; into `replies`, per turn, (seconds to the reply's own
    first audio, what it said)."""
    from websockets.asyncio.client import connect

    from agent_app.mind import filler

    results = []
    async with connect(url, max_size=1 << 22, open_timeout=60) as ws:
        frames = asyncio.Queue()

        async def receive():
            async for message in ws:
                await frames.put((time.monotonic(), message))

        receiver = asyncio.create_task(receive())
        size = int(RATE * 2 * FRAME_SEC)
        silence = b"\0" * size
        clock = time.monotonic()

        async def send(frame):
            nonlocal clock
            await ws.send(frame)
            clock += FRAME_SEC
            delay = clock - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                clock = time.monotonic()

        async def until(kind, *, talking=True):
            """Streams silence (the open microphone) until a frame of `kind` arrives."""
            while True:
                while frames.empty():
                    if talking:
                        await send(silence)
                    else:
                        await asyncio.sleep(0.01)
                at, message = await frames.get()
                if isinstance(message, bytes):
                    if kind == "audio":
                        return at, None
                    continue
                frame = json.loads(message)
                if frame["type"] == "error":
                    raise Overloaded(frame) if frame["code"] == "stt_busy" else RuntimeError(frame)
                if frame["type"] == kind:
                    return at, frame

        await until("agent.done")
        for turn in range(turns):
            audio = clips[turn % len(clips)]
            for offset in range(0, len(audio), size):
                await send(audio[offset:offset + size])
            spoken_end = time.monotonic()
            try:
                _, speaking = await until("agent.speaking")
                first_audio, _ = await until("audio")
                reply_audio = first_audio
                if speaking["text"] == filler("de"):
                    _, speaking = await until("agent.speaking")
                    reply_audio, _ = await until("audio")
                _, latency = await until("turn.latency")
            except Overloaded:  # never answered: counts as too slow
                results.append((float("inf"), None))
                if replies is not None:
                    replies.append((float("inf"), ""))
                continue
            results.append((first_audio - spoken_end, latency))
            if replies is not None:
                replies.append((reply_audio - spoken_end, speaking["text"]))
            await until("agent.done")
        await ws.send('{"type": "end"}')
        receiver.cancel()
    return results


class Overloaded(Exception):
    """The agent answered stt_busy: recognition did not finish within its deadline."""


def _grant(base, key):
    import urllib.request

    request = urllib.request.Request(f"{base}/api/voice/agent/sessions", data=b"{}", method="POST", headers={
        "Authorization": f"Bearer {key}", "X-Tenant": "bench", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["url"]


def _served(project, **extra_env):
    port = free_port()
    log_path = project.tmp / "uvicorn.log"
    # INFO: the server's log says whether the end-of-turn model was loaded (read below).
    env = {**project.env, "AGENT_WS_URL": f"ws://{HOST}:{port}", "LOG_LEVEL": "INFO", **extra_env}
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "console.asgi:application", "--host", HOST, "--port", str(port),
             "--ws", "websockets-sansio", "--lifespan", "off", "--no-access-log", "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    wait_until_up(f"http://{HOST}:{port}/health", server, log_path, 60)
    return server, f"http://{HOST}:{port}", log_path


def _row(sessions, results):
    for value, latency in results:  # each turn, for the reader of the log
        print(f"  {value:.2f} s", {key: value for key, value in (latency or {}).items() if key != "type"}, flush=True)
    seconds = [value for value, _ in results]
    measured = [latency for _, latency in results if latency is not None]
    row = {"sessions": sessions, "turns": len(seconds), "p50 s": round(statistics.median(seconds), 2),
           "p95 s": round(_percentile(seconds, 0.95), 2), "max s": round(max(seconds), 2)}
    # The server's own figure: from the arrival of the caller's last voiced frame (the
    # clip's trailing silence not counted as waiting), the stricter of the two.
    totals = [m["totalMs"] / 1000 for m in measured]
    row["server p50 s"] = round(statistics.median(totals), 2) if totals else ""
    row["server p95 s"] = round(_percentile(totals, 0.95), 2) if totals else ""
    for stage in STAGES:
        row[f"{stage[:-2]} ms (median)"] = round(statistics.median(m[stage] for m in measured)) if measured else ""
    return row


def _bench_tenant(project: Any) -> str:
    """The benchmark's tenant, its minutes more than any run uses; its API key."""
    key = create_tenant_with_key(project, "bench")
    project.manage("shell", "-c", "from console.tenants.models import Tenant; "
                   "Tenant.objects.filter(slug='bench').update(minute_cap=100000, max_call_minutes=10)")
    return key


def reply_latency(load):
    """Voice agent: end of utterance → first byte of the reply audio (mock lane, Whisper base), 1 and 2 sessions"""
    with temp_project() as project:
        key = _bench_tenant(project)
        clips, made_by = speeches(project, sentences())
        print(f"Caller's speech: {made_by}; sentences: {sentences()}", flush=True)
        server, base, log_path = _served(project)
        rows = []
        try:
            # A first session loads the recogniser and the end-of-turn model (not counted).
            asyncio.run(_caller(_grant(base, key), clips, 1))
            rows.append(_row(1, asyncio.run(_caller(_grant(base, key), clips, sized(TURNS_ALONE)))))
            print(rows[-1], flush=True)

            async def together():
                urls = [_grant(base, key) for _ in range(2)]
                return await asyncio.gather(*(_caller(url, clips, sized(TURNS_TOGETHER)) for url in urls))

            rows.append(_row(2, [value for caller in asyncio.run(together()) for value in caller]))
            print(rows[-1], flush=True)
        finally:
            stop(server)
            notes = [json.loads(line)["message"] for line in Path(log_path).read_text().splitlines()
                     if "Smart Turn" in line and line.startswith("{")]
            print("\n".join(notes[:3]) or "(the server logged nothing about Smart Turn)", flush=True)
        return rows


# Issue 28: the same turns answered by a model that streams as a local LLM does.
FIRST_TOKEN_SEC, TOKENS_PER_SEC = 0.3, 30.0
TURNS_PER_LANE, ROUNDS = 12, 3


def reply_latency_streaming_lane(load):
    """Voice agent on a streaming LLM lane (300 ms to the first token, 30 tokens/s) vs the mock lane: end of utterance → first reply audio, one session at a time"""
    from bench.bench_chat import ANSWER, STREAMING_REGISTRY
    from tests.openai_fake import FakeChatServer, Reply

    fake = FakeChatServer(Reply(text=ANSWER, first_token_delay=FIRST_TOKEN_SEC, tokens_per_second=TOKENS_PER_SEC,
                                usage=(60, 30)))
    lanes = (("mock lane", "mock"), ("streaming lane (fake: 300 ms, then 30 tokens/s)", "live"))
    servers, results = {}, {label: [] for label, _ in lanes}
    try:
        with temp_project() as project:
            key = _bench_tenant(project)
            clips, made_by = speeches(project, sentences())
            print(f"Caller's speech: {made_by}; the streaming lane answers: {ANSWER!r}", flush=True)
            project.django(STREAMING_REGISTRY.format(url=fake.url))
            # Both servers up, their turns interleaved in rounds: a busy machine's changing
            # load falls on both lanes alike.
            for label, mode in lanes:
                servers[label] = _served(project, GATEWAY_MODE=mode)
                asyncio.run(_caller(_grant(servers[label][1], key), clips, 1))  # loads the models (not counted)
            for _ in range(sized(ROUNDS)):
                for label, _mode in lanes:
                    results[label] += asyncio.run(_caller(_grant(servers[label][1], key), clips,
                                                          sized(TURNS_PER_LANE // ROUNDS)))
    finally:
        for server, _base, _log in servers.values():
            stop(server)
        fake.stop()
    rows = [{"lane": label, **_row(1, results[label])} for label, _ in lanes]
    for row in rows:
        print(row, flush=True)
    added = {"lane": "streaming − mock (target: ≤ 0.5 s)", "sessions": "", "turns": ""}
    for column, value in rows[1].items():
        if column not in ("lane", "sessions", "turns"):
            other = rows[0][column]
            added[column] = (round(value - other, 2) if isinstance(value, float) and isinstance(other, float)
                             else value - other if isinstance(value, int) and column != "sessions" else "")
    return [*rows, added]
