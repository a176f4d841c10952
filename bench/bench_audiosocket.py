"""Phone calls through Asterisk's AudioSocket (issue 35): how long a caller waits from the
end of an utterance to the first audio of the agent's reply, alone and with calls in
parallel until p95 passes 2 s — the same two figures as the Twilio path
(bench_phone.py) and SIP (bench_sip.py).

uvicorn serves console.asgi in a throwaway project (the dialplan's registration over
HTTP) and `manage.py audiosocket` listens on TCP, as `make run` starts it; each caller is
the tests' AudioSocketPeer in this process playing the PBX: `POST
/voice/asterisk/<carrier>/calls` with the carrier's bearer secret answers a UUID, the
connection sends it in the 0x01 frame, then German speech of the product's own synthesis
as 8 kHz signed linear in 20 ms 0x10 frames at real time, then silence as Asterisk sends
it. "End of utterance" is when the clip's last frame was sent (as for the Twilio path);
the reply begins with its first frame that is not silence. The figure includes the
~0.5 s of silence the detector waits for, recognition (Whisper base), the gateway (mock
lane) and synthesis of the reply. The caller speaks again once the reply has been quiet
1.5 s (no marks on this wire say it ended)."""
import asyncio
import contextlib
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid

import numpy

from bench.bench_agent import _served
from bench.bench_phone import CALLED, MAX_CALLS, TURNS, TURNS_PER_CALL, _row, phone_setup
from bench.harness import HOST, ROOT, create_tenant_with_key, free_port, sized, stop, temp_project
from tests.agent_app.phone import CALLER, AudioSocketPeer

P95_LIMIT = 2.0  # issue 35's bound, as for SIP
QUIET_SEC = 1.5  # the opening or a reply is over once its audio has paused this long
SILENT_PEAK = 100  # a frame whose samples all stay within ±100 (about -50 dBFS) is silence


def _listening(project):
    """`manage.py audiosocket` on a free port, once it accepts connections: (process, port)."""
    port = free_port()
    log_path = project.tmp / "audiosocket.log"
    with open(log_path, "w") as log:
        listener = subprocess.Popen([sys.executable, "manage.py", "audiosocket", "--host", HOST, "--port", str(port)],
                                    cwd=ROOT, env=project.env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if listener.poll() is not None:
            raise RuntimeError(f"the AudioSocket listener exited:\n{log_path.read_text()[-3000:]}")
        try:
            # A connection closed before its UUID frame is a PBX that hung up: nothing is booked.
            socket.create_connection((HOST, port), timeout=1).close()
            return listener, port
        except OSError:
            time.sleep(0.1)
    stop(listener)
    raise RuntimeError(f"the AudioSocket listener did not listen within 60 s:\n{log_path.read_text()[-3000:]}")


def _register(base, secret):
    """The dialplan's registration of a call to CALLED: the UUID its AudioSocket() connects with."""
    request = urllib.request.Request(f"{base}/voice/asterisk/ast1/calls", method="POST",
                                     data=urllib.parse.urlencode({"from": CALLER, "to": CALLED}).encode(),
                                     headers={"Authorization": f"Bearer {secret}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return uuid.UUID(response.read().decode())


def _voiced(peer, since):
    """Arrival times of the agent's frames after `since` that are not silence."""
    return [at for at, payload in peer.audio_in(since)
            if numpy.abs(numpy.frombuffer(payload, dtype="<i2")).max(initial=0) > SILENT_PEAK]


def _quiet(peer, since):
    """Whether the agent spoke after `since` and has since paused QUIET_SEC."""
    heard = peer.audio_in(since)
    return bool(heard) and time.monotonic() - heard[-1][0] > QUIET_SEC


async def _silence_until(peer, condition, limit=120):
    """Silence at real time until `condition()` holds: False if it did not within `limit`
    seconds or the listener hung up."""
    try:
        await peer.audio_until(condition, limit)
    except AssertionError:  # the peer's "gave up waiting"
        return False
    return True


async def _call(base, port, secret, speeches, turns):
    """One call of `turns` utterances; the latency of each reply's first voiced frame."""
    call_uuid = await asyncio.to_thread(_register, base, secret)
    latencies = []
    async with AudioSocketPeer(port) as peer:
        await peer.send(0x01, call_uuid.bytes)
        await _silence_until(peer, lambda: _quiet(peer, 0.0))  # the opening: disclosure and greeting
        for turn in range(turns):
            await peer.audio(speeches[turn % len(speeches)])
            spoken_end = time.monotonic()
            if not await _silence_until(peer, lambda end=spoken_end: _voiced(peer, end)):
                latencies.append(float("inf"))  # never answered: counts as too slow
                continue
            latencies.append(_voiced(peer, spoken_end)[0] - spoken_end)
            await _silence_until(peer, lambda end=spoken_end: _quiet(peer, end))  # the reply was sent in full
        with contextlib.suppress(ConnectionError):  # the listener may have hung up first
            await peer.send(0x00)  # the caller hangs up
        await asyncio.wait_for(peer.closed.wait(), 30)
    return latencies


def audiosocket_reply_latency(load):
    """Phone (Asterisk AudioSocket, 8 kHz linear): end of utterance → first voiced frame of the reply (mock lane)"""
    with temp_project() as project:
        create_tenant_with_key(project, "bench")
        secret = project.manage("create_carrier", "ast1", "--kind", "asterisk").strip().splitlines()[-1]
        speeches = phone_setup(project, "pcm_s16le")
        server, base, _log = _served(project)
        listener, rows = None, []
        try:
            listener, port = _listening(project)
            asyncio.run(_call(base, port, secret, speeches, 1))  # loads the recogniser (not counted)
            rows.append(_row(1, asyncio.run(_call(base, port, secret, speeches, sized(TURNS)))))
            for calls in range(2, sized(MAX_CALLS, 2) + 1):
                async def together(count=calls):
                    return await asyncio.gather(*(_call(base, port, secret, speeches, sized(TURNS_PER_CALL))
                                                  for _ in range(count)))

                rows.append(_row(calls, [value for call in asyncio.run(together()) for value in call]))
                if rows[-1]["p95 s"] > P95_LIMIT:
                    break
        finally:
            if listener is not None:
                stop(listener)
            stop(server)
        return rows
