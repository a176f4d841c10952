"""Personal data that apps above calls_app keep about a call, and the hook through which
the privacy features reach it (docs/privacy.md, docs/architecture.md).

privacy_app exports, erases and expires what is stored about callers, but it may not
import its siblings (agent_app keeps the voice agent's sessions, whose `variables`
hold what the caller or the tenant's page gave, e.g. a number to call back). Such an
app registers a `CallData` here when the apps are ready; privacy_app asks every one
registered. Both import calls_app, neither the other.
"""
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class CallData:
    """One kind of data kept per call, and what the privacy features need of it. Every
    function takes keyword arguments only and starts from `tenant`."""

    # The export's key and the erasure and retention receipts' count (camelCase).
    name: str
    # calls_naming(*, tenant, pattern) → ids of the tenant's calls whose data holds the
    # number; `pattern` is `console.phone.written_pattern(e164)` (a `__regex` pattern).
    calls_naming: Callable
    # export(*, tenant, call_ids) → a JSON-safe list of what is kept about those calls.
    export: Callable
    # erase(*, tenant, call_ids) → how many rows lost their personal data.
    erase: Callable
    # expire(*, tenant, created_before) → how many rows of ended calls created before
    # the moment were deleted (with the tenant's transcript period).
    expire: Callable


_registered: dict[str, CallData] = {}


def register_call_data(data: CallData) -> None:
    """Registers (or replaces, by name) one kind of call data; from AppConfig.ready()."""
    _registered[data.name] = data


def registered_call_data() -> list[CallData]:
    return list(_registered.values())
