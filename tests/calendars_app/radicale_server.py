"""A real CalDAV server for the tests and the benchmark: Radicale on a free loopback
port, htpasswd (plain) authentication, its storage in a temporary folder (its item cache
checked by mtime and size, as docs/operations.md recommends); its log
names each request it received (at `log_level="info"`), which the tests count."""
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
from urllib.parse import urlsplit

from tests.live_service import free_port


@dataclass(frozen=True)
class Radicale:
    base: str
    user: str
    password: str
    log: Path

    def requests_to(self, method: str, url: str) -> int:
        """How many `method` requests for the collection at `url` Radicale received so
        far (it logs each one as it arrives, before it answers)."""
        line = f"{method} request for {urlsplit(url).path!r}"
        return sum(line in entry for entry in self.log.read_text().splitlines())

    def make_calendar(self, cal_id: str) -> str:
        import caldav

        client = caldav.DAVClient(url=self.base, username=self.user, password=self.password)
        return str(client.principal().make_calendar(name=cal_id, cal_id=cal_id).url)


@contextlib.contextmanager
def radicale(log_level: str = "warning") -> Iterator[Radicale]:
    folder = Path(tempfile.mkdtemp(prefix="radicale-"))
    port, user, password = free_port(), "praxis", "pw-" + uuid.uuid4().hex[:12]
    (folder / "users").write_text(f"{user}:{password}\n")
    (folder / "config").write_text(
        f"[server]\nhosts = 127.0.0.1:{port}\n[auth]\ntype = htpasswd\nhtpasswd_filename = {folder}/users\n"
        f"htpasswd_encryption = plain\n[storage]\nfilesystem_folder = {folder}/collections\n"
        # Radicale computes a calendar's ctag from every event's cache entry; checked by
        # mtime and size instead of the file's hash that takes 80 ms, not 100, for 2,000
        # events (docs/operations.md recommends it to a practice that runs Radicale).
        "use_mtime_and_size_for_item_cache = True\n"
        f"[logging]\nlevel = {log_level}\n")
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
        yield Radicale(f"http://127.0.0.1:{port}/", user, password, folder / "log")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(10)
        log.close()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def without_ctag(server: Radicale) -> Iterator[str]:
    """A CalDAV server that has no ctag, on a loopback port of its own: every request
    forwarded to `server` as it came, each answer passed back with CalendarServer's
    getctag left out of it (what a server that does not know the property answers).
    Yields its base URL; a collection's path is the same as on `server`."""
    import re
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import requests

    hop_by_hop = {"host", "connection", "content-length", "content-encoding", "transfer-encoding", "accept-encoding"}

    class Forward(BaseHTTPRequestHandler):
        def forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            answer = requests.request(self.command, server.base.rstrip("/") + self.path, data=body, timeout=30,
                                      headers={k: v for k, v in self.headers.items() if k.lower() not in hop_by_hop})
            content = re.sub(rb"<(\w+:)?getctag(\s[^>]*)?(/>|>[^<]*</(\w+:)?getctag>)", b"", answer.content)
            self.send_response(answer.status_code)
            for name, value in answer.headers.items():
                if name.lower() not in hop_by_hop:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(content)

        do_GET = do_HEAD = do_PUT = do_DELETE = do_OPTIONS = do_PROPFIND = do_REPORT = do_MKCALENDAR = forward

        def log_message(self, *args: object) -> None:
            pass  # Radicale's own log has the requests

    proxy = ThreadingHTTPServer(("127.0.0.1", free_port()), Forward)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}/"
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(10)
