"""A real SIP phone on loopback: Debian's `baresip` (baresip-core) with a config folder of
its own, driven over its `ctrl_tcp` module (netstring-framed JSON commands and events).
It registers at the registrar, dials, sends a WAV through `aufile` (8 kHz mono; padded
with silence, since aufile ends the call when its file runs out), sends RFC 4733 DTMF
(`sndcode`), hangs up, and `sndfile` records what it heard (`dump-*-dec.wav`)."""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import wave
from pathlib import Path
from typing import IO

import numpy

from tests.sip.kamailio import free_port

MODULES = "/usr/lib/baresip/modules"


def write_wav(path: Path, samples: numpy.ndarray, rate: int = 8000) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.astype("<i2").tobytes())
    return path


def read_wav(path: Path) -> tuple[numpy.ndarray, int]:
    with wave.open(str(path)) as source:
        return numpy.frombuffer(source.readframes(source.getnframes()), dtype="<i2"), source.getframerate()


def active_windows(samples: numpy.ndarray, rate: int, threshold_db: float = -40.0) -> numpy.ndarray:
    """Per 20 ms window: whether it is louder than `threshold_db` dBFS."""
    window = rate // 50
    count = len(samples) // window
    frames = samples[:count * window].astype(numpy.float64).reshape(count, window) / 32768.0
    rms = numpy.sqrt((frames ** 2).mean(axis=1)) + 1e-12
    return 20 * numpy.log10(rms) > threshold_db


def _ports() -> tuple[int, int, int]:
    """(SIP, control, first RTP) ports for a baresip phone, none in another's way: baresip
    binds its SIP port for UDP and TCP and the next one for its TLS transport (TCP), so
    that one must be free too and neither the control port nor the 16 RTP ports."""
    for _ in range(50):
        sip, ctrl, rtp = free_port(), free_port(socket.SOCK_STREAM), free_port()
        taken = {sip, sip + 1}
        if ctrl in taken or taken & set(range(rtp, rtp + 16)) or ctrl in range(rtp, rtp + 16):
            continue
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tls:
                tls.bind(("127.0.0.1", sip + 1))
        except OSError:
            continue
        return sip, ctrl, rtp
    raise RuntimeError("no free ports for a baresip phone")


class Phone:
    def __init__(self, directory: Path, account: str, password: str, registrar_port: int,
                 codecs: tuple[str, ...] = ("PCMA", "PCMU")) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.account, self.password, self.registrar_port = account, password, registrar_port
        self.codecs = codecs
        self.events: list[dict] = []
        self.cv = threading.Condition()
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.logger: threading.Thread | None = None
        self.token = 0
        self.silence = write_wav(self.dir / "silence.wav", numpy.zeros(8000 * 300, dtype=numpy.int16))

    def config(self) -> str:
        sip_port, ctrl_port, rtp = _ports()
        self.ctrl_port = ctrl_port
        modules = ["g711.so", "aufile.so", "sndfile.so"] + (["g722.so"] if "G722" in self.codecs else [])
        return "\n".join([
            "poll_method\tepoll", f"sip_listen\t127.0.0.1:{sip_port}", "call_local_timeout\t60",
            f"audio_source\taufile,{self.silence}", "ausrc_srate\t8000", "auplay_srate\t8000",
            "ausrc_channels\t1", "auplay_channels\t1", "audio_txmode\tpoll", f"rtp_ports\t{rtp}-{rtp + 15}",
            "rtcp_mux\tno", "jitter_buffer_delay\t0-0", "net_interface\t127.0.0.1", f"module_path\t{MODULES}",
            *[f"module\t{name}" for name in modules], "module_app\tmenu.so", "module\tctrl_tcp.so",
            f"ctrl_tcp_listen\t127.0.0.1:{ctrl_port}", f"snd_path\t{self.dir / 'rec'}", "ringback_disabled\tyes",
            "statmode_default\toff", ""])

    def start(self) -> "Phone":
        (self.dir / "rec").mkdir(exist_ok=True)
        (self.dir / "accounts").write_text("")
        (self.dir / "contacts").write_text("")
        # A free port can be taken by another process before baresip binds it (the suite
        # runs on two workers beside kamailio and the agents): then baresip starts again
        # on new ports, at most three times, and a failure shows what it said.
        said = []
        for _ in range(3):
            (self.dir / "config").write_text(self.config())
            if self._run():
                break
            self.stop()
            said.append((self.dir / "baresip.log").read_text(errors="replace")[-800:])
        assert self.sock is not None, f"baresip did not start: {said}"
        self.sock.settimeout(None)
        threading.Thread(target=self._read, daemon=True).start()
        codecs = ",".join(f"{name}/16000/1" if name == "G722" else name for name in self.codecs)
        self.command("uanew", f"<sip:{self.account}@127.0.0.1:{self.registrar_port}>;auth_pass={self.password};"
                              f"answermode=manual;audio_codecs={codecs};regint=600;ptime=20")
        assert self.wait_event("REGISTER_OK", 15), self.events[-5:]
        return self

    def _run(self) -> bool:
        """Starts baresip on the config's ports; True once its control port answers.
        baresip prints "baresip is ready." when its modules are loaded (ctrl_tcp's
        listener among them), and its output ends when it exits (a port taken): either
        wakes the wait."""
        self.proc = subprocess.Popen(["baresip", "-f", str(self.dir)], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.dir,
                                     start_new_session=True)
        ready = threading.Event()
        self.logger = threading.Thread(target=_log, args=(self.proc.stdout, self.dir / "baresip.log", ready),
                                       daemon=True)
        self.logger.start()
        ready.wait(20)
        try:
            self.sock = socket.create_connection(("127.0.0.1", self.ctrl_port), timeout=1)
        except OSError:
            return False
        return True

    def stop(self) -> None:
        if self.sock is not None:
            self.sock.close()
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            except ProcessLookupError:  # gone between the poll and the signal
                pass
        if self.logger is not None:
            self.logger.join(10)  # the log complete once its output has ended

    def _read(self) -> None:
        buffer = b""
        assert self.sock is not None
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            buffer += data
            while b":" in buffer:
                length, _, rest = buffer.partition(b":")
                if not length.isdigit() or len(rest) < int(length) + 1:
                    break
                payload, buffer = rest[:int(length)], rest[int(length) + 1:]
                message = json.loads(payload)
                with self.cv:
                    self.events.append({**message, "t": time.monotonic()})
                    self.cv.notify_all()

    def command(self, command: str, params: str = "") -> dict:
        assert self.sock is not None
        self.token += 1
        token = f"t{self.token}"
        payload = json.dumps({"command": command, "params": params, "token": token}).encode()
        self.sock.sendall(str(len(payload)).encode() + b":" + payload + b",")
        found = self.wait(lambda e: e.get("response") and e.get("token") == token, 10)
        assert found is not None, f"no answer to {command}"
        return found

    def wait(self, predicate, timeout: float, since: int = 0) -> dict | None:
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for event in self.events[since:]:
                    if predicate(event):
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def wait_event(self, kind: str, timeout: float, since: int = 0) -> dict | None:
        return self.wait(lambda e: e.get("type") == kind, timeout, since)

    def play(self, samples: numpy.ndarray) -> float:
        """Sends `samples` (8 kHz) from now on, then silence; the seconds they last."""
        padded = numpy.concatenate([samples, numpy.zeros(8000 * 120, dtype=numpy.int16)])
        self.command("ausrc", f"aufile,{write_wav(self.dir / f'say{time.monotonic_ns()}.wav', padded)}")
        return len(samples) / 8000

    def dial(self, number: str) -> int:
        """Dials `number` at the registrar; the index of the events from then on."""
        since = len(self.events)
        self.command("ausrc", f"aufile,{self.silence}")
        self.command("dial", f"sip:{number}@127.0.0.1:{self.registrar_port}")
        return since

    def send_dtmf(self, digits: str) -> None:
        for digit in digits:
            self.command("sndcode", digit)
            time.sleep(0.3)  # not a wait: a phone's gap between two key presses, so each is its own tone

    def hang_up(self, since: int) -> None:
        for _ in range(3):
            if self.wait_event("CALL_CLOSED", 0, since):
                return
            self.command("hangup")
            if self.wait_event("CALL_CLOSED", 3, since):
                return

    def heard_so_far(self) -> numpy.ndarray:
        """Per 20 ms window of the running call so far: whether the far end was heard
        (read from the decode dump as it is written)."""
        dumps = sorted((self.dir / "rec").glob("dump-*-dec.wav"), key=lambda path: path.stat().st_mtime)
        if not dumps:
            return numpy.zeros(0, dtype=bool)
        raw = dumps[-1].read_bytes()[44:]
        return active_windows(numpy.frombuffer(raw[:len(raw) // 2 * 2], dtype="<i2"), 8000)

    def wait_far_end_quiet(self, timeout: float, quiet_sec: float = 1.0, since: int = 0) -> bool:
        """Waits until the far end spoke (after window `since`) and has then been quiet `quiet_sec`."""
        deadline = time.monotonic() + timeout
        windows = int(quiet_sec * 50)
        while time.monotonic() < deadline:
            active = self.heard_so_far()
            if active[since:].sum() > 25 and len(active) > since + windows and not active[-windows:].any():
                return True
            time.sleep(0.2)  # polling the dump baresip writes as it hears, with a deadline
        return False

    def recordings(self) -> tuple[numpy.ndarray, numpy.ndarray]:
        """What the phone sent and heard in its last call (sndfile's encode and decode dumps, 8 kHz)."""
        def last(kind: str) -> numpy.ndarray:
            dumps = sorted((self.dir / "rec").glob(f"dump-*-{kind}.wav"), key=lambda path: path.stat().st_mtime)
            assert dumps, "no recording"
            return read_wav(dumps[-1])[0]
        return last("enc"), last("dec")

    def heard(self) -> tuple[numpy.ndarray, int]:
        """What the phone heard in its last call (sndfile's decode dump)."""
        dumps = sorted((self.dir / "rec").glob("dump-*-dec.wav"), key=lambda path: path.stat().st_mtime)
        assert dumps, "no recording"
        return read_wav(dumps[-1])


def _log(output: IO[bytes], path: Path, ready: threading.Event) -> None:
    """baresip's output into its log file, line by line; `ready` set when it says so or ends."""
    with open(path, "wb") as log:
        for line in output:
            log.write(line)
            log.flush()
            if b"baresip is ready." in line:
                ready.set()
    ready.set()


def reply_latencies(sent: numpy.ndarray, heard: numpy.ndarray, rate: int = 8000) -> list[float | None]:
    """Seconds from the end of each utterance the phone sent to the first onset of the far
    end's voice in what it heard (its own recording: the way SignalWire measured real
    calls), None where no reply came. The two dumps end together (both close when the
    call is torn down), which aligns their timelines. An utterance ends with 0.5 s of
    silence; an onset needs 0.2 s of silence before it and 60 ms of voice."""
    said, got = active_windows(sent, rate), active_windows(heard, rate)
    shift = len(got) - len(said)
    ends, inside = [], False
    for index, active in enumerate(said):
        if active:
            inside, last = True, index
        elif inside and index - last >= 25:
            ends.append(last + 1)
            inside = False
    found: list[float | None] = []
    for end in ends:
        at = end + shift
        onset = next((i for i in range(max(at, 10), len(got) - 3)
                      if got[i:i + 3].all() and not got[i - 10:i].any()), None)
        found.append(None if onset is None else round((onset - at) * 0.02, 3))
    return found
