"""A real CalDAV server for the tests and the benchmark: Radicale on a free loopback
port, htpasswd (plain) authentication, its storage in a temporary folder."""
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.live_service import free_port


@dataclass(frozen=True)
class Radicale:
    base: str
    user: str
    password: str

    def make_calendar(self, cal_id: str) -> str:
        import caldav

        client = caldav.DAVClient(url=self.base, username=self.user, password=self.password)
        return str(client.principal().make_calendar(name=cal_id, cal_id=cal_id).url)


@contextlib.contextmanager
def radicale() -> Iterator[Radicale]:
    folder = Path(tempfile.mkdtemp(prefix="radicale-"))
    port, user, password = free_port(), "praxis", "pw-" + uuid.uuid4().hex[:12]
    (folder / "users").write_text(f"{user}:{password}\n")
    (folder / "config").write_text(
        f"[server]\nhosts = 127.0.0.1:{port}\n[auth]\ntype = htpasswd\nhtpasswd_filename = {folder}/users\n"
        f"htpasswd_encryption = plain\n[storage]\nfilesystem_folder = {folder}/collections\n"
        "[logging]\nlevel = warning\n")
    log = open(folder / "log", "w")
    process = subprocess.Popen([sys.executable, "-m", "radicale", "--config", str(folder / "config")],
                               stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("Radicale did not start: " + (folder / "log").read_text()[-500:])
            time.sleep(0.05)  # polling the port with a deadline
        yield Radicale(f"http://127.0.0.1:{port}/", user, password)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        log.close()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
