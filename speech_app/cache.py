"""The cache of rendered audio, in a Django storage backend.

By default local files under `MEDIA_ROOT/audio-cache/`; a deployment with several
app servers points the `speech_cache` storage (settings.STORAGES) at a shared
directory or an object store. An entry is the MP3 (`<key>.mp3`) plus a small JSON
file with its duration, written after the MP3: a reader trusts an MP3 only once its
JSON exists, so a half-written MP3 is never served.
"""
import json
import threading
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, storages

STORAGE_ALIAS = "speech_cache"


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


class RenderCache:
    # Within one process, concurrent renders of the same key wait for the first one
    # instead of synthesising the same text again.
    _key_locks = {}
    _key_locks_guard = threading.Lock()

    def __init__(self, storage):
        self.storage = storage

    @staticmethod
    def _names(key):
        folder = f"render/{key[:2]}/{key}"
        return f"{folder}.mp3", f"{folder}.json"

    def get(self, key):
        mp3_name, meta_name = self._names(key)
        try:
            with self.storage.open(meta_name, "rb") as meta_file:
                meta = json.loads(meta_file.read())
            with self.storage.open(mp3_name, "rb") as mp3_file:
                return RenderedAudio(key=key, mp3=mp3_file.read(), duration_sec=meta["durationSec"])
        except (FileNotFoundError, ValueError, KeyError):
            return None

    def put(self, rendered):
        mp3_name, meta_name = self._names(rendered.key)
        for name, content in ((mp3_name, rendered.mp3),
                              (meta_name, json.dumps({"durationSec": rendered.duration_sec}).encode())):
            if self.storage.exists(name):
                self.storage.delete(name)  # a stale or half-written leftover
            saved = self.storage.save(name, ContentFile(content))
            if saved != name:
                # Another server wrote the same entry at the same moment: keep theirs.
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

    @classmethod
    def _lock_for(cls, key):
        with cls._key_locks_guard:
            if len(cls._key_locks) > 1024:  # only ever a handful are held at once
                cls._key_locks = {k: lock for k, lock in cls._key_locks.items() if lock.locked()}
            return cls._key_locks.setdefault(key, threading.Lock())


def render_cache():
    return RenderCache(cache_storage())
