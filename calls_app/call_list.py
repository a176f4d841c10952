"""`GET /v2/calls`, declared (console/listing.py): a page of calls as JSON text, each call
written once per process and then taken from `call_texts` (calls_app/call_texts.py)
while its row and its transcript lines stay the same. The transcript lines are read
apart and written by hand (`selectors.transcript_lines`), the one field not derived;
`transcript_version` says whether they changed."""
import orjson
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from calls_app import recordings, selectors
from calls_app.call_texts import call_texts
from calls_app.models import Call
from calls_app.serializers import CallListQuerySerializer, CallSerializer
from console.listing import PAGE_ORDER, Listing
from console.representation import ReadyJSON


class CallListing(Listing):
    def page(self, tenant, query):
        """`{"calls", "next"}`: the page's calls as the JSON text of their list (ReadyJSON),
        and the cursor of the next page. One query when every call of the page is known to
        this process, two otherwise (the transcript lines of the others)."""
        rows, convert, next_cursor = self.fetch(tenant, **query)
        zone = timezone.get_current_timezone_name()
        texts = [call_texts.get(_text_key(row, zone)) for row in rows]
        missing = [(position, row) for position, row in enumerate(rows) if texts[position] is None]
        if missing:
            converted = convert([row for _position, row in missing])
            # Calls that never had a line (version 0) need no query for them.
            lines = selectors.transcript_lines(call_ids=[row[_ID] for row in converted if row[_VERSION] != 0])
            for (position, raw), item in zip(missing, self.items(converted, tenant), strict=True):
                item["transcript"] = lines.get(item["id"], [])
                try:
                    texts[position] = orjson.dumps(item)
                except TypeError:  # what orjson would not write as DRF does: DRF writes it, and it is not kept
                    texts[position] = JSONRenderer().render(item)
                    continue
                call_texts.put(_text_key(raw, zone), texts[position])
        return {"calls": ReadyJSON(b"[" + b",".join(texts) + b"]"), "next": next_cursor}


CALLS = CallListing("calls", CallSerializer, model=Call, query=CallListQuerySerializer, ordering=PAGE_ORDER,
                    supplied=["transcript"], extra_columns=["transcript_version"], filters={
                        "status": "status", "direction": "direction", "number": ("from_e164", "to_e164"),
                        "since": "created_at__gte", "until": "created_at__lt", "lead": "lead_id"})
_ID, _VERSION, _RECORDING = (CALLS.columns.index(name) for name in ("id", "transcript_version", "recording_url"))


def _text_key(row, zone):
    """A call's text is kept under its row and zone; one with a recording of ours also
    under the period of its signed link, which changes every RECORDING_LINK_TTL_SEC."""
    if recordings.is_stored(row[_RECORDING]):
        return row, zone, recordings.link_period()
    return row, zone
