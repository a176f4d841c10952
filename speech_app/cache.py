"""The cache of rendered audio, in a Django storage backend.

By default local files under `MEDIA_ROOT/audio-cache/`; a deployment with several
app servers points the `speech_cache` storage (settings.STORAGES) at a shared
directory or an object store. An entry is the MP3 (`<key>.mp3`) plus a small JSON
file with its duration, written after the MP3: a reader trusts an MP3 only once its
JSON exists, so a half-written MP3 is never served.

The cache is bounded (RENDER_CACHE_MAX_MB) when its storage keeps local files, i.e.
is a FileSystemStorage (the default) or a subclass: the least recently used entries
are evicted.
- Recency is kept by the cache itself, not by the file system's access times (which
  noatime and relatime mounts do not keep): a hit sets its JSON's modification time.
- Every write happens under an exclusive `flock` on a file beside the entries, so
  the bound holds across the worker processes (and threads) sharing the directory,
  and room is made *before* an entry is written: at no moment are there more bytes
  than the bound.
- That file also holds the bytes in use, so a write costs no directory scan (which
  grows with the entries). Only a write that would pass the bound scans: it evicts
  down to 90 % of the bound minus the new entry, so the next scans are a tenth of the
  bound apart, and it recounts the bytes, correcting any drift (entries deleted by
  hand, a crash between counting and writing, which only ever over-counts).
Another storage (an object store) has neither `flock` nor a cheap way to record a
hit; there the application does not bound the cache, and the store's own expiry (a
lifecycle rule on the prefix `render/`) should.
"""
import contextlib
import fcntl
import json
import os
import threading
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, storages

STORAGE_ALIAS = "speech_cache"
FOLDER = "render"
# Beside the entries' folder, so that scanning the entries never meets it.
USAGE_FILE = "render-usage.lock"
# A write that passes the bound evicts down to this share of it.
LOW_WATER = 0.9
_RECORD_WIDTH = 20  # digits of the byte count in USAGE_FILE


@dataclass(frozen=True)
class RenderedAudio:
    key: str
    mp3: bytes
    duration_sec: float


@lru_cache(maxsize=1)
def cache_storage():
    if STORAGE_ALIAS in settings.STORAGES:
        return storages[STORAGE_ALIAS]
    return FileSystemStorage(location=settings.MEDIA_ROOT / "audio-cache")


def max_bytes():
    return int(settings.RENDER_CACHE_MAX_MB * 1024 * 1024)


class RenderCache:
    # Within one process, concurrent renders of the same key wait for the first one
    # instead of synthesising the same text again.
    _key_locks: dict[str, threading.Lock] = {}
    _key_locks_guard = threading.Lock()

    def __init__(self, storage, max_bytes=None):
        self.storage = storage
        self.max_bytes = max_bytes
        # Local files: a lock file beside the entries and modification times we can set.
        self.local = isinstance(storage, FileSystemStorage)

    @staticmethod
    def _names(key):
        folder = f"{FOLDER}/{key[:2]}/{key}"
        return f"{folder}.mp3", f"{folder}.json"

    @property
    def bounded(self):
        return self.max_bytes is not None and self.local

    def get(self, key):
        mp3_name, meta_name = self._names(key)
        try:
            with self.storage.open(meta_name, "rb") as meta_file:
                meta = json.loads(meta_file.read())
            with self.storage.open(mp3_name, "rb") as mp3_file:
                cached = RenderedAudio(key=key, mp3=mp3_file.read(), duration_sec=meta["durationSec"])
        except (FileNotFoundError, ValueError, KeyError):
            return None
        if self.local:
            # The entry was used now (its JSON's mtime is its place in the LRU order).
            with contextlib.suppress(FileNotFoundError):  # evicted meanwhile: served all the same
                os.utime(self.storage.path(meta_name))
        return cached

    def put(self, rendered):
        mp3_name, meta_name = self._names(rendered.key)
        files = ((mp3_name, rendered.mp3), (meta_name, json.dumps({"durationSec": rendered.duration_sec}).encode()))
        size = sum(len(content) for _, content in files)
        if self.max_bytes is not None and size > self.max_bytes:
            return  # it could never fit: served, not kept
        with self._usage() as usage:
            if all(self.storage.exists(name) for name, _ in files):
                return  # another process wrote the same entry meanwhile: keep theirs
            for name, _ in files:
                if self.storage.exists(name):  # a leftover of a crash or of a deletion by hand
                    usage.add(-self.storage.size(name))
                    self.storage.delete(name)
            usage.make_room(size)
            usage.add(size)  # counted before writing: a crash in between over-counts
            for name, content in files:
                saved = self.storage.save(name, ContentFile(content))
                if saved != name:
                    # A server that does not share our lock wrote the same name: keep theirs.
                    self.storage.delete(saved)

    def get_or_render(self, key, render):
        """The cached entry for `key`, or `render()` (a RenderedAudio) stored under it."""
        cached = self.get(key)
        if cached is not None:
            return cached, True
        with self._lock_for(key):
            cached = self.get(key)
            if cached is not None:
                return cached, True
            rendered = render()
            self.put(rendered)
            return rendered, False

    @contextlib.contextmanager
    def _usage(self):
        """The bytes in use, under the exclusive lock of all writers (a no-op tally for
        a storage the cache does not bound)."""
        if not self.bounded:
            yield _Unbounded()
            return
        path = self.storage.path(USAGE_FILE)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(os.open(path, os.O_RDWR | os.O_CREAT, 0o644), "r+b", buffering=0) as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)  # released when the file is closed
            usage = _Usage(self, lock_file)
            try:
                yield usage
            finally:
                usage.save()

    def entries(self):
        """[(last used, bytes, [names])] of every entry, least recently used first;
        a leftover without its JSON counts as never used."""
        found = {}
        try:
            folders = self.storage.listdir(FOLDER)[0]
        except FileNotFoundError:
            return []
        for folder in folders:
            for filename in self.storage.listdir(f"{FOLDER}/{folder}")[1]:
                name = f"{FOLDER}/{folder}/{filename}"
                try:
                    size, modified = self.storage.size(name), os.stat(self.storage.path(name)).st_mtime
                except FileNotFoundError:
                    continue
                entry = found.setdefault(os.path.splitext(filename)[0], [float("-inf"), 0, []])
                entry[1] += size
                entry[2].append(name)
                if filename.endswith(".json"):
                    entry[0] = modified
        return sorted((tuple(entry) for entry in found.values()), key=lambda entry: entry[0])

    @classmethod
    def _lock_for(cls, key):
        with cls._key_locks_guard:
            if len(cls._key_locks) > 1024:  # only ever a handful are held at once
                cls._key_locks = {k: lock for k, lock in cls._key_locks.items() if lock.locked()}
            return cls._key_locks.setdefault(key, threading.Lock())


def render_cache_evict():
    """The periodic job: evicts the least recently used entries down to the bound (a
    lowered RENDER_CACHE_MAX_MB, entries left by a crash); writes do this themselves."""
    cache = render_cache()
    with cache._usage() as usage:
        usage.make_room(0)


class _Usage:
    """The bytes in use, as recorded in the lock file; held only under its lock."""

    def __init__(self, cache, lock_file):
        self.cache, self.lock_file = cache, lock_file
        try:
            self.bytes = int(os.pread(lock_file.fileno(), _RECORD_WIDTH, 0))
        except ValueError:
            self.bytes = None  # never counted, or unreadable: recount

    def add(self, size):
        if self.bytes is not None:
            self.bytes = max(0, self.bytes + size)

    def make_room(self, size):
        """Evicts least recently used entries until `size` more bytes fit."""
        limit = self.cache.max_bytes
        if self.bytes is not None and self.bytes + size <= limit:
            return
        entries = self.cache.entries()
        self.bytes = sum(entry_bytes for _, entry_bytes, _ in entries)
        if self.bytes + size <= limit:
            return
        keep = max(0, int(limit * LOW_WATER) - size)
        for _, entry_bytes, names in entries:
            if self.bytes <= keep:
                break
            # The JSON first: without it no reader trusts the MP3 any more.
            for name in sorted(names, key=lambda name: not name.endswith(".json")):
                self.cache.storage.delete(name)
            self.bytes -= entry_bytes
            # An empty folder would cost every later scan a listing (writers are all
            # under this lock, so none is about to write into it).
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(self.cache.storage.path(names[0])))

    def save(self):
        # Fixed width, overwritten in place: truncating the file made every write slower.
        record = b" " * _RECORD_WIDTH if self.bytes is None else f"{self.bytes:0{_RECORD_WIDTH}d}".encode()
        os.pwrite(self.lock_file.fileno(), record, 0)


class _Unbounded:
    def add(self, size):
        pass

    def make_room(self, size):
        pass


def render_cache():
    return RenderCache(cache_storage(), max_bytes())
