"""The render cache is bounded (RENDER_CACHE_MAX_MB): least recently used entries are
evicted, and the bound holds under concurrent writers in separate processes."""
import multiprocessing
from pathlib import Path

import pytest
from django.core.files.storage import FileSystemStorage, InMemoryStorage

from speech_app.cache import FOLDER, USAGE_FILE, RenderCache, RenderedAudio, cache_storage, render_cache
from speech_app.services import speech_render
from tests.speech_app.cache_worker import key_of, render_many

pytestmark = pytest.mark.django_db

BOUND_MB = 0.05  # about four renders of a short sentence (10-13 KB each)


def entry_files(location):
    return [path for path in (Path(location) / FOLDER).rglob("*") if path.is_file()]


def cache_bytes(location):
    return sum(path.stat().st_size for path in entry_files(location))


def recorded_bytes(location):
    return int((Path(location) / USAGE_FILE).read_bytes())


def sentence(n):
    return f"Das ist Satz Nummer {n}."


@pytest.fixture
def bound(settings):
    settings.RENDER_CACHE_MAX_MB = BOUND_MB
    return int(BOUND_MB * 1024 * 1024)


def test_the_cache_stays_under_its_bound_and_keeps_the_most_recent_renders(bound):
    location = cache_storage().location
    for n in range(12):
        rendered, from_cache = speech_render(text=sentence(n))
        assert not from_cache and len(rendered.mp3) > 8000
        assert cache_bytes(location) <= bound
    assert recorded_bytes(location) == cache_bytes(location)
    # Most recent first: a hit changes the order but evicts nothing.
    assert [speech_render(text=sentence(n))[1] for n in (11, 10, 9)] == [True, True, True]
    assert speech_render(text=sentence(0))[1] is False  # the oldest went first
    assert cache_bytes(location) <= bound


def test_an_entry_in_use_stays_while_older_ones_are_evicted(bound):
    location = cache_storage().location
    speech_render(text="Willkommen bei der Praxis.")
    for n in range(12):
        speech_render(text=sentence(n))
        # A hit is recorded by the cache itself: file access times are not kept on noatime mounts.
        assert speech_render(text="Willkommen bei der Praxis.")[1] is True
    assert speech_render(text=sentence(0))[1] is False
    assert cache_bytes(location) <= bound


def test_an_entry_larger_than_the_bound_is_served_but_not_kept(settings):
    settings.RENDER_CACHE_MAX_MB = 0.001  # 1 KiB
    for _ in range(2):
        rendered, from_cache = speech_render(text=sentence(1))
        assert not from_cache and len(rendered.mp3) > 1024
    assert entry_files(cache_storage().location) == []


def test_without_a_bound_nothing_is_evicted(settings):
    settings.RENDER_CACHE_MAX_MB = 500.0
    for n in range(6):
        speech_render(text=sentence(n))
    assert all(speech_render(text=sentence(n))[1] for n in range(6))


def test_a_storage_without_local_paths_caches_without_evicting():
    # An object store has no flock and no cheap way to record a hit: its own expiry
    # rules bound it (docs/api.md). InMemoryStorage has no local paths either.
    cache = RenderCache(InMemoryStorage(), max_bytes=20_000)
    assert not cache.bounded
    for n in range(5):
        cache.put(RenderedAudio(key=key_of("store", n), mp3=bytes(9000), duration_sec=1.0))
    assert all(cache.get(key_of("store", n)) is not None for n in range(5))


@pytest.mark.slow  # processes
def test_the_bound_holds_under_two_processes_writing_at_once(tmp_path):
    location, max_bytes = str(tmp_path / "cache"), 40_000
    context = multiprocessing.get_context("spawn")  # fresh interpreters, like two gunicorn workers
    barrier, done = context.Barrier(2), context.Queue()
    workers = [context.Process(target=render_many, args=(location, max_bytes, tag, 150, barrier, done))
               for tag in ("first", "second")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0]  # a failed worker printed its traceback
    reports = [done.get(timeout=10) for _ in workers]
    assert all(0 < most <= max_bytes and unpaired == [] for _, _, most, unpaired in reports), reports
    assert cache_bytes(location) <= max_bytes
    assert recorded_bytes(location) == cache_bytes(location)
    _, last_key, _, _ = max(reports)  # the last render of the process that finished last
    assert RenderCache(FileSystemStorage(location=location), max_bytes).get(last_key) is not None


def test_render_cache_reads_the_bound_from_the_settings(settings):
    settings.RENDER_CACHE_MAX_MB = 0.5
    assert render_cache().max_bytes == 524288
