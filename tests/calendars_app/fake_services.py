"""Loopback fakes of Microsoft Graph (with its token endpoint) and Cal.com API v2 that
speak their wire formats and record every request (method, path, query, headers, body)
for the tests to check field by field."""
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Route = Callable[[dict[str, Any]], tuple[int, dict[str, str], Any]]


class FakeService:
    """Answers each request by the first route whose (method, path prefix) matches."""

    def __init__(self, routes: list[tuple[str, str, Route]]) -> None:
        self.routes = routes
        self.got: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                content_type = self.headers.get("Content-Type", "")
                if "json" in content_type:
                    body: Any = json.loads(raw or b"null")
                elif "form" in content_type:
                    body = {key: values[0] for key, values in parse_qs(raw.decode()).items()}
                else:
                    body = raw.decode()
                request = {"method": self.command, "path": parts.path,
                           "query": {key: values[0] for key, values in parse_qs(parts.query).items()},
                           "headers": {key.lower(): value for key, value in self.headers.items()}, "body": body}
                fake.got.append(request)
                for method, prefix, route in fake.routes:
                    if method == self.command and parts.path.startswith(prefix):
                        status, headers, answer = route(request)
                        break
                else:
                    status, headers, answer = 404, {}, {"error": "no route"}
                data = b"" if answer is None else json.dumps(answer).encode()
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def requests_to(self, method: str, prefix: str) -> list[dict[str, Any]]:
        return [got for got in self.got if got["method"] == method and got["path"].startswith(prefix)]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
