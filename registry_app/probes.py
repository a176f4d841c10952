"""Health probes of registry lanes (`manage.py probe_registry`).

A lane is probed when its `health` is a loopback URL, a path of its loopback
`endpoint`, or a path that this service serves (called on `base_url`). Nothing is
ever sent off the machine unless the operator passes `allow_remote`: remote targets
are skipped, redirects are not followed, and proxy settings from the environment
are ignored (a proxy would carry even a loopback request elsewhere).
"""
import ipaddress
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from django.urls import Resolver404, resolve

DEFAULT_TIMEOUT = 2.0
DEFAULT_BASE_URL = "http://127.0.0.1:8000"


@dataclass(frozen=True)
class ProbePlan:
    lane_id: str
    url: object  # the URL to GET, or None when the lane is skipped
    skip_reason: str = ""


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
    if not health:
        return ProbePlan(lane_id, None, "no health check")
    if _http_url(health):
        url = health
    elif health.startswith("/"):
        if _http_url(endpoint):
            url = urljoin(endpoint, health)
        elif _serves_path(health):
            url = urljoin(base_url, health)
        else:
            return ProbePlan(lane_id, None, "not a path of this service")
    else:
        return ProbePlan(lane_id, None, "not an HTTP health check")
    if not allow_remote and not is_loopback(urlsplit(url).hostname):
        return ProbePlan(lane_id, None, "remote; not probed without --allow-remote")
    return ProbePlan(lane_id, url)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # the 3xx is answered as an HTTPError: a failed probe


_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def run_probe(plan, *, timeout=DEFAULT_TIMEOUT):
    request = urllib.request.Request(plan.url, headers={"User-Agent": "stimmwerk-registry-probe"})
    started = time.monotonic()
    try:
        with _opener.open(request, timeout=timeout) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        return ProbeResult(plan.lane_id, plan.url, False, f"HTTP {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return ProbeResult(plan.lane_id, plan.url, False, f"unreachable: {reason}")
    elapsed_ms = round((time.monotonic() - started) * 1000)
    return ProbeResult(plan.lane_id, plan.url, 200 <= status < 300, f"HTTP {status} in {elapsed_ms} ms")


def run_probes(plans, *, timeout=DEFAULT_TIMEOUT, workers=8):
    runnable = [plan for plan in plans if plan.url]
    if not runnable:
        return []
    with ThreadPoolExecutor(max_workers=min(workers, len(runnable))) as pool:
        return list(pool.map(lambda plan: run_probe(plan, timeout=timeout), runnable))
