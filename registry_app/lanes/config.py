"""The settings of calling lanes, and the per-lane ones named after the lane.

A lane's own settings are environment variables named after its id in capitals with
`_` for every other character: `chat-mistral-api` → `GATEWAY_KEY_CHAT_MISTRAL_API`.
They are collected once at start-up into `settings.GATEWAY_LANE_SETTINGS`. They keep
the gateway's names (it was their first user), and serve the speech lanes that
speech_app calls too: one key, endpoint and model per lane, whoever calls it.
"""
import re

from django.conf import settings

GATEWAY_MODES = ("mock", "live")
LANE_MODES = ("mock", "api", "cli")


def lane_variable(lane_id, kind):
    """The environment variable of one of a lane's settings, e.g. GATEWAY_KEY_CHAT_MISTRAL_API."""
    return f"GATEWAY_{kind}_{re.sub(r'[^A-Za-z0-9]', '_', lane_id).upper()}"


def lane_setting(lane_id, kind):
    return settings.GATEWAY_LANE_SETTINGS.get(lane_variable(lane_id, kind), "").strip()


def gateway_mode():
    return settings.GATEWAY_MODE
