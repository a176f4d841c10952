"""Health probes of registry lanes (`manage.py probe_registry`).

A lane is probed when its `health` is a loopback URL, a path of its loopback
`endpoint`, or a path that this service serves (called on `base_url`, with the
probe credential of `registry_app.probe_auth`: this service's health paths need a
credential like all of its paths). Nothing is ever sent off the machine unless the
operator passes `allow_remote`: remote targets are skipped, redirects are not
followed, and proxy settings from the environment are ignored (a proxy would carry
even a loopback request elsewhere).

A probe tells the truth about the lane, not only about the server: a 2xx answer
whose JSON says the engines of the lane's capability are not usable (this service's
`/api/voice/health` answers 200 with `usableNow` per engine), or says `"ok": false`,
is a failure.
"""
import ipaddress
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from django.urls import Resolver404, resolve

from console.parsers import json_text
from registry_app.probe_auth import probe_credential

DEFAULT_TIMEOUT = 2.0
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
# Enough for any health answer; a larger body is judged by its status alone.
MAX_BODY_BYTES = 64 * 1024


@dataclass(frozen=True)
class ProbePlan:
    lane_id: str
    url: object  # the URL to GET, or None when the lane is skipped
    skip_reason: str = ""
    capability: str = ""
    own: bool = False  # a path of this service: sent with the probe credential


@dataclass(frozen=True)
class ProbeResult:
    lane_id: str
    url: str
    ok: bool
    detail: str


def is_loopback(host):
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _http_url(text):
    parts = urlsplit(text)
    return parts if parts.scheme in ("http", "https") and parts.hostname else None


def _serves_path(path):
    try:
        resolve(urlsplit(path).path)
    except Resolver404:
        return False
    return True


def plan_probe(entry, *, base_url=DEFAULT_BASE_URL, allow_remote=False):
    lane_id, health, endpoint = entry["id"], entry.get("health"), entry.get("endpoint") or ""
    capability = entry.get("capability", "")
    own = False
    if not health:
        return ProbePlan(lane_id, None, "no health check", capability)
    if _http_url(health):
        url = health
    elif health.startswith("/"):
        if _http_url(endpoint):
            url = urljoin(endpoint, health)
        elif _serves_path(health):
            url, own = urljoin(base_url, health), True
        else:
            return ProbePlan(lane_id, None, "not a path of this service", capability)
    else:
        return ProbePlan(lane_id, None, "not an HTTP health check", capability)
    if not allow_remote and not is_loopback(urlsplit(url).hostname):
        return ProbePlan(lane_id, None, "remote; not probed without --allow-remote", capability)
    return ProbePlan(lane_id, url, capability=capability, own=own)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # the 3xx is answered as an HTTPError: a failed probe


_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def judge_body(capability, body):
    """None when a healthy-looking answer's body agrees, else why the lane is not healthy."""
    try:
        data = json_text(body)
    except ValueError:
        return None  # not JSON: the status alone counts
    if not isinstance(data, dict):
        return None
    engines = data.get("engines")
    if isinstance(engines, list):
        mine = [engine for engine in engines if isinstance(engine, dict) and engine.get("kind") == capability]
        if mine:
            if any(engine.get("usableNow") is True for engine in mine):
                return None
            reason = next((engine.get("reason") for engine in mine if engine.get("reason")), "")
            return f"no usable {capability} engine" + (f": {reason}" if reason else "")
    if data.get("ok") is False:
        return "the answer says ok: false"
    return None


def run_probe(plan, *, timeout=DEFAULT_TIMEOUT):
    headers = {"User-Agent": "stimmwerk-registry-probe"}
    if plan.own:
        headers["Authorization"] = f"Bearer {probe_credential()}"
    request = urllib.request.Request(plan.url, headers=headers)
    started = time.monotonic()
    try:
        with _opener.open(request, timeout=timeout) as response:
            status = response.status
            body = response.read(MAX_BODY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        return ProbeResult(plan.lane_id, plan.url, False, f"HTTP {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return ProbeResult(plan.lane_id, plan.url, False, f"unreachable: {reason}")
    elapsed_ms = round((time.monotonic() - started) * 1000)
    detail = f"HTTP {status} in {elapsed_ms} ms"
    if not 200 <= status < 300:
        return ProbeResult(plan.lane_id, plan.url, False, detail)
    problem = judge_body(plan.capability, body) if len(body) <= MAX_BODY_BYTES else None
    if problem:
        return ProbeResult(plan.lane_id, plan.url, False, f"{detail}, but {problem}")
    return ProbeResult(plan.lane_id, plan.url, True, detail)


def run_probes(plans, *, timeout=DEFAULT_TIMEOUT, workers=8):
    runnable = [plan for plan in plans if plan.url]
    if not runnable:
        return []
    with ThreadPoolExecutor(max_workers=min(workers, len(runnable))) as pool:
        return list(pool.map(lambda plan: run_probe(plan, timeout=timeout), runnable))
