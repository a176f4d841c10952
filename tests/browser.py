"""Real-browser helpers: Debian's Chromium driven by Playwright, and a small server
that plays a customer's page on an origin of its own."""
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

CHROMIUM = "/usr/bin/chromium"
# This machine's network is closed: nothing in the browser may reach out on its own.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

needs_chromium = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"Debian's chromium is not installed at {CHROMIUM} (make test installs it; or apt-get install chromium)",
)

# Run before any script of a page (through the DevTools protocol, so no page policy
# stops it): every Content-Security-Policy violation the page reports is kept.
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", function (event) {
  window.__violations.push(event.violatedDirective + " " + (event.blockedURI || "") + " in " +
                           (event.sourceFile || "") + ":" + event.lineNumber);
});
"""


def violations(page):
    return page.evaluate("window.__violations")


class HostPageServer:
    """Serves one HTML page on its own origin (127.0.0.1, a free port), with the
    response headers given (e.g. the customer's own Content-Security-Policy)."""

    def __init__(self, html, headers=None):
        page = html.encode()
        extra = dict(headers or {})

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def inject_into_html(page, url_glob, markup):
    """Answers requests for `url_glob` with the server's real response (headers, and so
    its Content-Security-Policy, unchanged) and `markup` added to the body: what an
    HTML-injection bug would let an attacker do."""

    def handle(route):
        response = route.fetch()
        body = response.text().replace("</body>", markup + "</body>", 1)
        route.fulfill(response=response, body=body)

    page.route(url_glob, handle)
