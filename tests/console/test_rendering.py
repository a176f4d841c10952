"""FastJSONRenderer writes what DRF's JSONRenderer writes, byte for byte, and leaves to
it everything orjson would write differently."""
import datetime as dt
import decimal
import enum
import json
import uuid

import pytest
from django.utils.translation import gettext_lazy
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer, TemplateHTMLRenderer
from rest_framework.request import Request
from rest_framework.serializers import Serializer
from rest_framework.settings import api_settings
from rest_framework.test import APIRequestFactory
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from calls_app.views import CallViewSet, UsageView
from console.assistants.views import AssistantViewSet
from console.rendering import ContentNegotiation, FastJSONRenderer, fast_json_renderers
from console.representation import ReadyJSON
from console.views import HealthView
from leads_app.models import Lead
from leads_app.views import LeadViewSet

EVERY_CHARACTER = "".join(chr(c) for c in range(0x3000) if not 0xD800 <= c < 0xE000) + "\U0001F600\U0010FFFF"


class Level(enum.IntEnum):
    HIGH = 3


PLAIN = [
    {"calls": [{"id": "cl_1", "text": EVERY_CHARACTER, "n": -(2**63), "m": 2**64 - 1, "ok": True, "no": False,
                "none": None, "nested": [[], {}, [{"": ""}]]}]},
    ReturnDict({"status": Lead.Status.NEW, "level": Level.HIGH, "ids": ReturnList([1, 2], serializer=Serializer())},
               serializer=Serializer()),
    {"key": str(uuid.uuid4()), "z": "\u2028\u2029 and \\u2028"},
    [], {}, "just a string", 0,
]
LEFT_TO_DRF = [
    {"big": 2**64}, {"when": dt.datetime(2025, 3, 1, 10, 0, 0, 123456, tzinfo=dt.timezone.utc)},
    {"day": dt.date(2025, 3, 1)}, {"price": decimal.Decimal("1.10")}, {"lazy": gettext_lazy("Not found.")},
    {1: "integer key"}, {"id": uuid.UUID(int=7)},
]


def both(data, media_type=None):
    return FastJSONRenderer().render(data, media_type, {}), JSONRenderer().render(data, media_type, {})


@pytest.mark.parametrize("data", PLAIN + LEFT_TO_DRF)
def test_bytes_are_drfs(data):
    fast, drf = both(data)
    assert fast == drf


def test_plain_data_is_written_by_orjson_and_the_rest_by_drf(monkeypatch):
    by_drf = []
    original = JSONRenderer.render

    def counting(self, data, *args, **kwargs):
        by_drf.append(data)
        return original(self, data, *args, **kwargs)

    monkeypatch.setattr(JSONRenderer, "render", counting)
    for data in PLAIN + LEFT_TO_DRF:
        FastJSONRenderer().render(data, None, {})
    assert by_drf == [data for data in LEFT_TO_DRF if data != {"id": uuid.UUID(int=7)}]  # orjson writes a UUID as DRF


def test_indented_rendering_and_no_body_are_drfs():
    data = {"calls": [{"id": "cl_1"}]}
    fast, drf = both(data, "application/json; indent=4")
    assert fast == drf and b"\n    " in fast
    assert both(None) == (b"", b"")


def test_the_hot_read_views_use_it():
    assert FastJSONRenderer in fast_json_renderers() and JSONRenderer not in fast_json_renderers()
    for view in (CallViewSet, LeadViewSet, UsageView, HealthView):
        assert view.renderer_classes == fast_json_renderers()
    # An assistant holds floats (temperature, numbers of a tenant's JSON Schema): DRF's renderer.
    assert JSONRenderer in AssistantViewSet.renderer_classes and FastJSONRenderer not in AssistantViewSet.renderer_classes


def test_the_listing_picks_the_renderer():
    """ListedMixin derives `floats_in_body` from its listing's columns: a float or JSON
    column read keeps DRF's renderer, a view that declares it holds none gets the fast one."""
    assert (CallViewSet.listing.holds_floats, LeadViewSet.listing.holds_floats) == (False, False)
    assert AssistantViewSet.listing.holds_floats and AssistantViewSet.floats_in_body
    assert not (CallViewSet.floats_in_body or LeadViewSet.floats_in_body or UsageView.floats_in_body)


ACCEPTS = [None, "", "*/*", "application/json", "application/json; indent=4", "text/html", "text/html, */*",
           "application/*", "*/*;q=0.8", "APPLICATION/JSON", " application/json", "application/json,text/html",
           "image/png"]
QUERIES = ["", "?format=json", "?format=api", "?format=", "?limit=5", "?format=xml"]
RENDERER_LISTS = [[JSONRenderer], [JSONRenderer, BrowsableAPIRenderer], fast_json_renderers(),
                  [BrowsableAPIRenderer, JSONRenderer], [TemplateHTMLRenderer, JSONRenderer]]


def negotiated(negotiation, accept, query, renderers, format_suffix):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().get(f"/v2/calls{query}", **headers))
    try:
        renderer, media_type = negotiation.select_renderer(request, [r() for r in renderers], format_suffix)
    except Exception as error:  # noqa: BLE001 - the error is part of the answer compared
        return type(error)
    return type(renderer), media_type


@pytest.mark.parametrize("renderers", RENDERER_LISTS)
@pytest.mark.parametrize("format_suffix", [None, "json"])
def test_content_negotiation_answers_as_drfs(renderers, format_suffix):
    for accept in ACCEPTS:
        for query in QUERIES:
            ours = negotiated(ContentNegotiation(), accept, query, renderers, format_suffix)
            assert ours == negotiated(DefaultContentNegotiation(), accept, query, renderers, format_suffix), \
                (accept, query)


def test_the_project_negotiates_with_it():
    assert api_settings.DEFAULT_CONTENT_NEGOTIATION_CLASS is ContentNegotiation


def test_ready_json_is_spliced_in_and_parsed_back_for_drfs_renderings():
    text = '[{"role":"user","text":"a\\"b\\\\c\\n\u2028 😀","ts":"2025-03-01T10:00:00Z"}]'
    written = {"calls": [{"id": "cl_1", "transcript": json.loads(text)}]}
    ready = {"calls": [{"id": "cl_1", "transcript": ReadyJSON(text)}]}
    assert FastJSONRenderer().render(ready, None, {}) == JSONRenderer().render(written, None, {})
    indented = "application/json; indent=4"
    assert FastJSONRenderer().render(ready, indented, {}) == JSONRenderer().render(written, indented, {})
    assert b"\\u2028" in FastJSONRenderer().render(ready, None, {})
