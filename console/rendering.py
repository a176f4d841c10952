"""Choosing and running the renderer of an API response, faster than DRF with DRF's
results.

`ContentNegotiation`: DRF's, with the answer for what nearly every client sends (no
Accept header, `*/*` or `application/json`, no format override) known without parsing.

`FastJSONRenderer`: DRF's JSON rendering, byte for byte, through orjson: for views
whose bodies are long lists (a page of 200 calls renders in a tenth of the time).

orjson writes strings, integers, booleans, null, lists and dicts exactly as DRF's
compact, non-ASCII JSONRenderer does, except U+2028 and U+2029, which DRF escapes and
this renderer escapes afterwards too. It writes some floats differently (1e-05 as
0.00001) and NaN as null where DRF refuses it: a view uses this renderer only when its
bodies hold no floats (`FAST_JSON_RENDERERS`). Anything else orjson would write
differently from DRF (dates, decimals, lazy strings, keys that are not strings, …) and
an indented rendering (`Accept: application/json; indent=4`) go to DRF's renderer.
`console.representation.ReadyJSON` (JSON text written beforehand) is spliced in as it
is (an orjson Fragment), and parsed back for DRF's renderer.
"""
import json

import orjson
from django.utils.cache import patch_vary_headers
from rest_framework.compat import split_header_value  # type: ignore[attr-defined]  # not in the stubs
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.settings import api_settings
from rest_framework.utils.encoders import JSONEncoder

from console.representation import ReadyJSON

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


# Accept values for which DRF picks the first renderer when it renders JSON, and
# answers that it accepted "application/json" (for */* the renderer's own type, as the
# more specific one).
_FIRST_RENDERER_ACCEPTS = (None, "*/*", "application/json")


def asks_for_default_json(request, renderers, format_suffix=None):
    """Whether DRF's negotiation would choose the first of `renderers` (classes or
    instances), a JSON renderer, with the media type "application/json": no format
    override and an Accept header that is absent, `*/*` or `application/json`.
    `request` is Django's or DRF's."""
    return bool(renderers) and renderers[0].media_type == "application/json" and not format_suffix \
        and request.META.get("HTTP_ACCEPT") in _FIRST_RENDERER_ACCEPTS \
        and not request.GET.get(api_settings.URL_FORMAT_OVERRIDE)


class ContentNegotiation(DefaultContentNegotiation):
    def select_renderer(self, request, renderers, format_suffix=None):
        if asks_for_default_json(request, renderers, format_suffix):
            return renderers[0], "application/json"
        return super().select_renderer(request, renderers, format_suffix)


def _refuse(value):
    if type(value) is ReadyJSON:
        return orjson.Fragment(value.text)
    raise TypeError(f"{type(value).__name__} is left to DRF")


class _Encoder(JSONEncoder):
    """DRF's, with ReadyJSON parsed back, for the renderings left to DRF."""

    def default(self, obj):
        if type(obj) is ReadyJSON:
            return json.loads(obj.text)
        return super().default(obj)


class FastJSONRenderer(JSONRenderer):
    encoder_class = _Encoder

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None or not (self.compact and not self.ensure_ascii and self.strict) or \
                self.get_indent(accepted_media_type, renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        try:
            body = orjson.dumps(data, default=_refuse, option=_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError is one too
            return super().render(data, accepted_media_type, renderer_context)
        # Line and paragraph separators are escaped, as DRF does for JavaScript's sake.
        return body.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")


def fast_json_renderers():
    """The project's renderers with DRF's JSONRenderer replaced by FastJSONRenderer, for
    the `renderer_classes` of a view whose bodies hold no floats."""
    return [FastJSONRenderer if renderer is JSONRenderer else renderer
            for renderer in api_settings.DEFAULT_RENDERER_CLASSES]


def add_view_headers(view, response):
    """The headers APIView.finalize_response adds to `response`: Allow, and Vary when
    several renderers could answer; for views that answer without DRF's cycle."""
    headers = dict(view.default_response_headers)
    vary = headers.pop("Vary", None)
    if vary is not None:
        patch_vary_headers(response, list(split_header_value(vary)))
    for name, value in headers.items():
        response[name] = value
