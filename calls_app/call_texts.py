"""Each call of the call list as the JSON text the endpoint writes for it, kept per
process.

A page of 200 calls holds about 1,200 transcript lines; reading them and turning the
page into JSON costs several times the rest of the request, while most pages are read
again and again (dashboards, exports, agents polling) and their calls no longer
change. So the text of each call is kept here, under everything it is written from:
the call's row as the database returned it (every column the API shows, before any
conversion, and `Call.transcript_version`, which the database changes with every line
written or deleted: migration 0006's triggers), and the time zone its timestamps are
written in. A text is used only for exactly that row.

That is exact because any change to a call or its lines changes the key, and the call
is written afresh: an erased transcript or a redacted call is never served from here.
The lines are read after the row; a line that arrives in between is in the text kept
under the row's older version, which no read that starts after that line's commit sees
again (every statement sees at least what the previous one saw).

Bounded: the least recently used texts leave once the texts together (with a fixed
allowance per entry for its key) pass `CALL_TEXT_CACHE_BYTES` (settings; 0 switches
the cache off).
"""
from collections import OrderedDict
from threading import Lock

from django.conf import settings

# What an entry's key and bookkeeping take beside its text, roughly.
ENTRY_OVERHEAD = 512


class CallTextCache:
    def __init__(self, max_bytes):
        self.max_bytes = max_bytes
        self._texts = OrderedDict()  # key -> JSON bytes
        self._bytes = 0
        self._lock = Lock()  # threaded workers share the process

    def get(self, key):
        text = self._texts.get(key)
        if text is not None:
            try:
                self._texts.move_to_end(key)
            except KeyError:  # evicted by another thread meanwhile; the text is still right
                pass
        return text

    def put(self, key, text):
        size = len(text) + ENTRY_OVERHEAD
        if size > self.max_bytes:
            return
        with self._lock:
            previous = self._texts.pop(key, None)
            if previous is not None:
                self._bytes -= len(previous) + ENTRY_OVERHEAD
            self._texts[key] = text
            self._bytes += size
            while self._bytes > self.max_bytes:
                _key, evicted = self._texts.popitem(last=False)
                self._bytes -= len(evicted) + ENTRY_OVERHEAD

    def clear(self):
        with self._lock:
            self._texts.clear()
            self._bytes = 0

    def __len__(self):
        return len(self._texts)


call_texts = CallTextCache(settings.CALL_TEXT_CACHE_BYTES)
