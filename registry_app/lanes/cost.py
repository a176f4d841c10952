"""Euros of one use of a lane, from the registry's cost units (model-hub-registry §2).

`eur` is the price per `unit`: `1M tok` per million tokens (input and output),
`1k chars`/`1M chars` per thousand/million characters, `audio-min`/`conv-min` per
minute, `call` per call. `flat`, `compute` (subscriptions, self-hosted) have no
per-use price: a lane of those units with `eur` > 0 is counted at `eur` per use, so
that a budget is never under-estimated. An unknown price (`eur` null) has no cost
here: the gateway never uses such a lane (it cannot keep a budget with it).
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Measures:
    """What one use consumed (or is expected to consume)."""

    tokens: int = 0
    characters: int = 0
    audio_seconds: float = 0.0


def lane_cost(lane, measures):
    eur = lane.eur
    if not eur:
        return 0.0
    unit = lane.cost_unit
    if unit == "1M tok":
        return eur * measures.tokens / 1_000_000
    if unit == "1k chars":
        return eur * measures.characters / 1_000
    if unit == "1M chars":
        return eur * measures.characters / 1_000_000
    if unit in ("audio-min", "conv-min"):
        return eur * measures.audio_seconds / 60
    return float(eur)  # call, flat, compute: per use
