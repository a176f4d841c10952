"""Writes of the registry: loading a document (all-or-nothing), recording health
probe results and the cooldowns of lanes whose calls failed."""
import datetime
import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils import timezone

from registry_app import routing, snapshot
from registry_app.errors import InvalidRegistryDocument
from registry_app.models import IntegrationLayer, Lane, LaneCooldown, LaneError, LaneHealth, RegistryVersion
from registry_app.validation import document_problems


@dataclass(frozen=True)
class LoadResult:
    version: RegistryVersion
    created: bool  # False: identical to the current version, nothing changed


def canonical_sha256(document: dict[str, Any]) -> str:
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _lane_row(version: RegistryVersion, position: int, entry: dict[str, Any]) -> Lane:
    cost = entry["cost"]
    return Lane(
        version=version, position=position, lane_id=entry["id"], name=entry["name"],
        capability=entry["capability"], provider=entry["provider"], hosting=entry["hosting"],
        access=entry["access"], endpoint=entry["endpoint"], health=entry["health"],
        cost_model=cost["model"], cost_unit=cost["unit"],
        cost_eur=None if cost["eur"] is None else Decimal(str(cost["eur"])),
        status=entry["status"], priority=entry["priority"], quality_tier=entry["quality_tier"],
        latency_class=entry["latency_class"], params=entry["params"], test=entry["test"],
        source=entry["source"], notes=entry["notes"],
    )


def registry_load(*, document: Any, loaded_by: str) -> LoadResult:
    """Make `document` the current registry version, or change nothing.

    Raises InvalidRegistryDocument with every problem (JSON paths) if the document is
    not valid. A document identical to the current one (same canonical JSON) creates
    no new version. Loading an older document again makes it current as a new version.
    """
    problems = document_problems(document)
    if problems:
        raise InvalidRegistryDocument(problems)
    sha = canonical_sha256(document)
    with transaction.atomic():
        # Serialises concurrent loads on databases with row locks (SQLite takes the
        # write lock at BEGIN IMMEDIATE anyway).
        current = RegistryVersion.objects.select_for_update().newest_first().first()
        if current is not None and current.sha256 == sha:
            return LoadResult(version=current, created=False)
        version = RegistryVersion.objects.create(
            document_text=json.dumps(document, ensure_ascii=False), sha256=sha,
            version=document["version"], updated=datetime.date.fromisoformat(document["updated"]), lane_count=len(document["models"]),
            loaded_by=loaded_by[:150],
        )
        # The browsing rows hold the current version only.
        Lane.objects.exclude(version=version).delete()
        IntegrationLayer.objects.exclude(version=version).delete()
        IntegrationLayer.objects.bulk_create(
            IntegrationLayer(version=version, name=name, description=description)
            for name, description in document["integration_layers"].items()
        )
        Lane.objects.bulk_create(
            (_lane_row(version, position, entry) for position, entry in enumerate(document["models"])),
            batch_size=1000,
        )
        transaction.on_commit(snapshot.invalidate)
    return LoadResult(version=version, created=True)


def _lane_state_changed() -> None:
    # At once for this process's next route, and again when the write is visible to all.
    routing.invalidate_lane_state()
    transaction.on_commit(routing.invalidate_lane_state)


def _cooldown_changed(lane_id: str, cooldown: LaneCooldown | None) -> None:
    # The router's state in memory learns this process's own writes at once; other
    # processes read them within routing.LANE_STATE_SECONDS.
    routing.note_cooldown(lane_id, cooldown)


def lanes_probe_all(*, base_url: str | None = None, timeout: float | None = None,
                    allow_remote: bool = False) -> list[Any]:
    """Probes every lane of the current registry and records each result (the periodic
    job; `manage.py probe_registry` does the same by hand). Returns the results."""
    from django.conf import settings

    # probes imports the API's authentication, which imports more than a service needs at load
    from registry_app.probes import DEFAULT_TIMEOUT, plan_probe, run_probes

    current = snapshot.current()
    if current is None:
        return []
    base_url = base_url or settings.REGISTRY_PROBE_BASE_URL
    plans = [plan_probe(lane.entry, base_url=base_url, allow_remote=allow_remote) for lane in current.lanes]
    results = run_probes(plans, timeout=timeout or DEFAULT_TIMEOUT)
    for result in results:
        lane_health_record(lane_id=result.lane_id, target=result.url, ok=result.ok, detail=result.detail)
    return results


def lane_health_record(*, lane_id: str, target: str, ok: bool, detail: str = "",
                       checked_at: datetime.datetime | None = None) -> LaneHealth:
    """The latest probe result of a lane, counting failures in a row (a success resets)."""
    with transaction.atomic():
        previous = LaneHealth.objects.select_for_update().filter(lane_id=lane_id).first()
        in_a_row = 0 if ok else (previous.consecutive_failures if previous is not None else 0) + 1
        health, _ = LaneHealth.objects.update_or_create(
            lane_id=lane_id,
            defaults={"target": target[:600], "ok": ok, "detail": detail[:300],
                      "checked_at": checked_at or timezone.now(), "consecutive_failures": in_a_row},
        )
        _lane_state_changed()
    return health


def lane_cooldown_start(*, lane_id: str, seconds: float, reason: str,
                        now: datetime.datetime | None = None) -> LaneCooldown:
    """Keep `lane_id` out of routing for `seconds` (a failed call); counts failures in a row."""
    now = now or timezone.now()
    with transaction.atomic():
        cooldown = LaneCooldown.objects.select_for_update().filter(lane_id=lane_id).first()
        if cooldown is None:
            cooldown = LaneCooldown(lane_id=lane_id, failures=0)
        cooldown.failures += 1
        # A second failure while another process already extended the cooldown keeps the later end.
        cooldown.until = max(now + datetime.timedelta(seconds=seconds), cooldown.until or now)
        cooldown.reason = reason[:300]
        cooldown.save()
    _cooldown_changed(lane_id, cooldown)
    return cooldown


def lane_error_record(*, lane_id: str, outcome: str, detail: str) -> None:
    """A lane's call failed: its last error (one row per lane; the count goes on)."""
    with transaction.atomic():
        error = LaneError.objects.select_for_update().filter(lane_id=lane_id).first()
        if error is None:
            error = LaneError(lane_id=lane_id, failures=0)
        error.failures += 1
        error.outcome, error.detail, error.failed_at = outcome[:32], detail[:300], timezone.now()
        error.save()


def lane_cooldown_clear(*, lane_id: str) -> None:
    """The lane answered again: its failures in a row start from zero."""
    LaneCooldown.objects.filter(lane_id=lane_id).delete()
    _cooldown_changed(lane_id, None)
