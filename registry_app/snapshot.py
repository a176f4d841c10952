"""The current registry version, parsed once per process.

Routing and the lane list read the current version's lanes from memory. Each read
costs one indexed query (number and hash of the newest version); when another process
has loaded a new version meanwhile, the number differs and the snapshot is rebuilt
from that version's document. A load in this process also drops the snapshot when
its transaction commits.
"""
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from types import MappingProxyType

from django.db import connection

from registry_app.models import RegistryVersion

QUALITY_RANK = MappingProxyType({"frontier": 0, "high": 1, "mid": 2})
LATENCY_RANK = MappingProxyType({"fast": 0, "medium": 1, "slow": 2})


@dataclass(frozen=True)
class SnapshotLane:
    """One lane with what filtering and routing need, precomputed."""

    id: str
    entry: dict  # the document's entry, exactly as loaded
    capability: str
    status: str
    hosting: str
    provider: str
    eur: object  # a number, or None for unknown
    cost_model: str
    cost_unit: str
    priority: int
    quality_tier: str
    latency_class: str
    languages: frozenset  # empty: the lane names no languages and matches any
    streaming: bool

    @classmethod
    def from_entry(cls, entry):
        params = entry.get("params") or {}
        cost = entry["cost"]
        return cls(
            id=entry["id"], entry=entry, capability=entry["capability"], status=entry["status"],
            hosting=entry["hosting"], provider=entry["provider"], eur=cost["eur"], cost_model=cost["model"],
            cost_unit=cost["unit"], priority=entry["priority"], quality_tier=entry["quality_tier"],
            latency_class=entry["latency_class"], languages=frozenset(params.get("languages") or ()),
            streaming=params.get("streaming") is True,
        )

    def speaks(self, language):
        return not self.languages or language in self.languages


@dataclass(frozen=True)
class Snapshot:
    number: int
    sha256: str
    document: dict
    lanes: tuple
    by_id: MappingProxyType
    by_capability: MappingProxyType
    # Results derived from this version (e.g. routes), kept while it is current.
    derived: "DerivedCache" = field(default_factory=lambda: DerivedCache(), compare=False, repr=False)

    @classmethod
    def of(cls, version):
        document = version.document
        lanes = tuple(SnapshotLane.from_entry(entry) for entry in document["models"])
        by_capability = {}
        for lane in lanes:
            by_capability.setdefault(lane.capability, []).append(lane)
        return cls(
            number=version.number, sha256=version.sha256, document=document, lanes=lanes,
            by_id=MappingProxyType({lane.id: lane for lane in lanes}),
            by_capability=MappingProxyType({key: tuple(value) for key, value in by_capability.items()}),
        )


class DerivedCache:
    """A small LRU map, bounded so that many distinct queries cannot grow it without limit."""

    def __init__(self, size=128):
        self._size = size
        self._items = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key, make):
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()  # outside the lock; computing twice in a race is harmless
        with self._lock:
            self._items[key] = value
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return value


_lock = threading.Lock()
_cached = None


def invalidate():
    global _cached
    with _lock:
        _cached = None


# Plain SQL: this runs on every routed request, and building the ORM query cost more
# than running it.
_NEWEST_SQL = f"SELECT number, sha256 FROM {RegistryVersion._meta.db_table} ORDER BY number DESC LIMIT 1"


def current():
    """The current version's Snapshot, or None when no registry has been loaded."""
    global _cached
    with connection.cursor() as cursor:
        cursor.execute(_NEWEST_SQL)
        newest = cursor.fetchone()
    if newest is None:
        return None
    newest = tuple(newest)
    cached = _cached
    # The hash too: a rolled-back load can hand its number to a later one.
    if cached is not None and (cached.number, cached.sha256) == newest:
        return cached
    version = RegistryVersion.objects.only("number", "sha256", "document_text").get(number=newest[0])
    fresh = Snapshot.of(version)
    with _lock:
        _cached = fresh
    return fresh
