"""A webhook receiver on loopback: answers each POST with the next scripted status
(the last one repeats) and keeps every request it got. Used by the webhook tests and
the benchmark. `hold` makes it keep a request open until released (a worker killed
mid-delivery)."""
import contextlib
import http.server
import socket
import threading

from tests.ports import worker_ports

# The loopback ports of this suite's own receivers (this xdist worker's share).
PORTS = worker_ports(range(18400, 18500))


class Receiver:
    def __init__(self, statuses=(200,), *, hold_first=False):
        self.statuses = list(statuses)
        self.requests = []  # (path, headers dict, body bytes)
        self.arrived = threading.Event()
        self.release = threading.Event()
        self.hold_first = hold_first
        self._lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver._lock:
                    receiver.requests.append((self.path, dict(self.headers), body))
                    number = len(receiver.requests)
                    status = receiver.statuses[min(number, len(receiver.statuses)) - 1]
                receiver.arrived.set()
                if receiver.hold_first and number == 1:
                    receiver.release.wait(60)
                    return  # the connection closes without an answer
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "/elsewhere")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = _bind(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def _bind(handler):
    for port in PORTS:
        with contextlib.suppress(OSError):
            server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
            server.daemon_threads = True
            return server
    raise RuntimeError(f"no free port in {PORTS}")


def closed_port_url():
    """A loopback URL where nothing listens (a receiver that is down)."""
    for port in PORTS:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return f"http://127.0.0.1:{port}/hook"
    raise RuntimeError("every port is taken")
