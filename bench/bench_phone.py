"""Phone calls through a Twilio-compatible carrier (issue 27): how long a caller waits
from the end of an utterance to the first `media` message of the agent's reply, alone
and with calls in parallel.

uvicorn serves console.asgi in a throwaway project (the carrier's webhook over HTTP, the
Media Streams WebSocket); each caller is a websockets client in this process that plays
the carrier: the voice webhook signed by Twilio's own RequestValidator, the TwiML's
stream, `start`, then German speech of the product's own synthesis as 8 kHz μ-law in
20 ms `media` messages at real time, then silence as a phone line sends it. "End of
utterance" is when the last message with speech was sent: the figure includes the
~0.5 s of silence the detector waits for, recognition (Whisper base), the gateway (mock
lane) and synthesis of the reply."""
import asyncio
import base64
import json
import re
import statistics
import time
import urllib.parse
import urllib.request
import uuid

from bench.bench_agent import SENTENCES, _percentile, _served
from bench.harness import create_tenant_with_key, dead_air, sized, stop, temp_project

ACCOUNT, TOKEN = "AC" + "0" * 32, "b" * 32
CALLER, CALLED = "+4917612345678", "+4930555000111"
TURNS = 20
MAX_CALLS, TURNS_PER_CALL, P95_LIMIT = 6, 3, 3.0

_SETUP = """
from agent_app.audio import WireFormat
from console.numbers.services import number_create
from console.tenants.models import Tenant
from speech_app.services import synthesizer_for
tenant = Tenant.objects.get(slug="bench")
Tenant.objects.filter(pk=tenant.pk).update(minute_cap=100000, max_call_minutes=10)
number_create(tenant=tenant, e164={called!r})
wire = WireFormat({encoding!r}, 8000)
for index, text in enumerate({sentences!r}):
    speech = synthesizer_for("de").synthesize(text, voice="de+m3")
    open(f"{tmp}/phone{{index}}.{encoding}", "wb").write(wire.from_pcm(speech.pcm, speech.sample_rate))
"""
SILENCE = b"\xff" * 160  # 20 ms of μ-law silence


def phone_setup(project, encoding="mulaw"):
    """The bench tenant with room for the calls and the number CALLED; SENTENCES spoken
    by the product's own synthesis as 8 kHz `encoding` (a WireFormat's), synthesised once:
    one bytes object each."""
    project.django(_SETUP.format(called=CALLED, encoding=encoding, sentences=SENTENCES, tmp=project.tmp))
    return [(project.tmp / f"phone{index}.{encoding}").read_bytes() for index in range(len(SENTENCES))]


def _incoming(base, called=CALLED):
    """The carrier's voice webhook for a new call to `called`: (call sid, stream URL, token)."""
    from twilio.request_validator import RequestValidator

    call_sid = "CA" + uuid.uuid4().hex
    url = f"{base}/voice/twilio/tw1/incoming"
    params = {"CallSid": call_sid, "AccountSid": ACCOUNT, "From": CALLER, "To": called, "CallStatus": "ringing",
              "Direction": "inbound"}
    request = urllib.request.Request(url, data=urllib.parse.urlencode(params).encode(), method="POST", headers={
        "X-Twilio-Signature": RequestValidator(TOKEN).compute_signature(url, params),
        "Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(request, timeout=30) as response:
        twiml = response.read().decode()
    stream = re.search(r'<Stream url="([^"]+)"', twiml).group(1)
    token = re.search(r'name="token" value="([^"]+)"', twiml).group(1)
    return call_sid, stream, token


async def _call(base, speeches, turns, called=CALLED, dead_airs=None):
    """One phone call of `turns` utterances to `called`; the latency of each reply's
    first media message (and, into `dead_airs`, the longest silence within each reply)."""
    from websockets.asyncio.client import connect

    call_sid, url, token = _incoming(base, called)
    latencies, marks, media = [], [], []  # media: (arrival, bytes of audio)
    async with connect(url, max_size=1 << 22, open_timeout=60) as ws:
        sid = "MZ" + uuid.uuid4().hex

        async def read():
            async for message in ws:
                event = json.loads(message)
                if event["event"] == "mark":
                    marks.append(time.monotonic())
                elif event["event"] == "media":
                    media.append((time.monotonic(), len(base64.b64decode(event["media"]["payload"]))))

        reader = asyncio.create_task(read())

        async def send_audio(audio):
            began = time.monotonic()
            for index, offset in enumerate(range(0, len(audio), 160)):
                await ws.send(json.dumps({"event": "media", "streamSid": sid, "media": {
                    "payload": base64.b64encode(audio[offset:offset + 160]).decode()}}))
                delay = began + (index + 1) * 0.02 - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)

        async def silence_until(condition, limit=120):
            deadline = time.monotonic() + limit
            while not condition():
                if time.monotonic() > deadline:
                    return False
                await send_audio(SILENCE)
            return True

        await ws.send(json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}))
        await ws.send(json.dumps({"event": "start", "streamSid": sid, "start": {
            "streamSid": sid, "callSid": call_sid, "accountSid": ACCOUNT, "customParameters": {"token": token},
            "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1}}}))
        await silence_until(lambda: len(marks) >= 2)  # the opening: disclosure and greeting
        for turn in range(turns):
            await send_audio(speeches[turn % len(speeches)])
            spoken_end, seen = time.monotonic(), len(marks)
            if not await silence_until(lambda end=spoken_end: media and media[-1][0] > end):
                latencies.append(float("inf"))  # never answered: counts as too slow
                continue
            latencies.append(next(at for at, _ in media if at > spoken_end) - spoken_end)
            await silence_until(lambda before=seen: len(marks) > before)  # the reply was sent in full
            if dead_airs is not None:
                dead_airs.append(dead_air([item for item in media if item[0] > spoken_end], 8000))
        await ws.send(json.dumps({"event": "stop", "streamSid": sid}))
        reader.cancel()
    return latencies


def phone_reply_latency(load):
    """Phone (Twilio Media Streams, μ-law): end of utterance → first media message of the reply (mock lane)"""
    with temp_project() as project:
        create_tenant_with_key(project, "bench")
        project.manage("create_carrier", "tw1", "--kind", "twilio", "--account-sid", ACCOUNT, "--auth-token", TOKEN)
        speeches = phone_setup(project)
        server, base, _log = _served(project)
        rows = []
        try:
            asyncio.run(_call(base, speeches, 1))  # loads the recogniser (not counted)
            alone = asyncio.run(_call(base, speeches, sized(TURNS)))
            rows.append(_row(1, alone))
            for calls in range(2, sized(MAX_CALLS, 2) + 1):
                async def together(count=calls):
                    return await asyncio.gather(*(_call(base, speeches, sized(TURNS_PER_CALL)) for _ in range(count)))

                rows.append(_row(calls, [value for call in asyncio.run(together()) for value in call]))
                if rows[-1]["p95 s"] > P95_LIMIT:
                    break
        finally:
            stop(server)
        return rows


def _row(calls, samples):
    row = {"calls": calls, "turns": len(samples), "p50 s": round(statistics.median(samples), 2),
           "p95 s": round(_percentile(samples, 0.95), 2), "max s": round(max(samples), 2)}
    print(row, flush=True)
    return row
