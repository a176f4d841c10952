"""The touchpoint catalog shipped with the project (`catalog.json`, CONTRACT §3).

Read and checked once per process; a broken catalog fails loudly at first use
rather than serving half of it.
"""
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CATALOG_FILE = Path(__file__).with_name("catalog.json")
TOUCHPOINT_ID = re.compile(r"[a-z0-9_-]+\.[a-z0-9_-]+")


@dataclass(frozen=True)
class Touchpoint:
    id: str
    text: str
    max_seconds: int
    opens_call: bool


class CatalogError(ValueError):
    pass


def parse_catalog(document):
    """Touchpoints of a catalog document, in its order; raises CatalogError."""
    touchpoints = {}
    for index, entry in enumerate(document.get("touchpoints") or []):
        where = f"touchpoints[{index}]"
        tp_id = entry.get("id")
        if not isinstance(tp_id, str) or not TOUCHPOINT_ID.fullmatch(tp_id):
            raise CatalogError(f"{where}.id {tp_id!r} is not of the form <area>.<name>")
        if tp_id in touchpoints:
            raise CatalogError(f"{where}.id {tp_id!r} is listed twice")
        text, max_seconds, opens_call = entry.get("text"), entry.get("maxSeconds"), entry.get("opensCall")
        if not isinstance(text, str) or not text.strip():
            raise CatalogError(f"{where}.text must be a non-empty string")
        if isinstance(max_seconds, bool) or not isinstance(max_seconds, int) or max_seconds < 1:
            raise CatalogError(f"{where}.maxSeconds must be a positive integer")
        if not isinstance(opens_call, bool):
            raise CatalogError(f"{where}.opensCall must be true or false")
        touchpoints[tp_id] = Touchpoint(tp_id, text, max_seconds, opens_call)
    if not touchpoints:
        raise CatalogError("the catalog lists no touchpoints")
    return touchpoints


@cache
def catalog():
    """{touchpoint id: Touchpoint}, in catalog order."""
    with open(CATALOG_FILE, encoding="utf-8") as handle:
        return parse_catalog(json.load(handle))


def touchpoint(touchpoint_id):
    """The catalog's touchpoint, or None."""
    return catalog().get(touchpoint_id)
