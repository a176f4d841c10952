"""The body of `GET /v2/calls`: a page of calls as JSON text, each call written once per
process and then taken from `call_texts` (calls_app/call_texts.py) while its row and
its transcript lines stay the same."""
import orjson
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from calls_app import recordings, selectors
from calls_app.call_texts import call_texts
from calls_app.serializers import call_list_item
from console.representation import ReadyJSON


def calls_page(*, tenant, limit, **query):
    """`(calls, next)`: the page's calls as the JSON text of their list (ReadyJSON), and
    the cursor of the next page. One query when every call of the page is known to this
    process, two otherwise (the transcript lines of the others)."""
    rows, convert, next_cursor = selectors.calls_page_rows(tenant=tenant, limit=limit, **query)
    zone = timezone.get_current_timezone_name()
    texts = [call_texts.get(_text_key(row, zone)) for row in rows]
    missing = [(position, row) for position, row in enumerate(rows) if texts[position] is None]
    if missing:
        converted = convert([row for _position, row in missing])
        at = selectors.TRANSCRIPT_VERSION_AT
        lines = selectors.transcript_lines(call_ids=[row[0] for row in converted if row[at] != 0])
        for (position, raw), row in zip(missing, converted, strict=True):
            item = call_list_item(row, lines.get(row[0], []))
            try:
                texts[position] = orjson.dumps(item)
            except TypeError:  # what orjson would not write as DRF does: DRF writes it, and it is not kept
                texts[position] = JSONRenderer().render(item)
                continue
            call_texts.put(_text_key(raw, zone), texts[position])
    return ReadyJSON(b"[" + b",".join(texts) + b"]"), next_cursor


_RECORDING_AT = selectors.CALL_COLUMNS.index("recording_url")


def _text_key(row, zone):
    """A call's text is kept under its row and zone; one with a recording of ours also
    under the period of its signed link, which changes every RECORDING_LINK_TTL_SEC."""
    if recordings.is_stored(row[_RECORDING_AT]):
        return row, zone, recordings.link_period()
    return row, zone
