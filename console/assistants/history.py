"""An assistant's version history as the API and the admin show it: each version's
config in the API's field names, what it recorded of what it names (its HTTP tools'
definitions), what it changed against the previous one, and what the draft changes
against the live version (docs/api.md, "Versions")."""
from typing import Any

from console.assistants import references
from console.assistants.models import Assistant, AssistantVersion
from console.assistants.selectors import PARTS, assistant_as_of, snapshot_changes
from console.assistants.serializers import shown_config

RECORDED = "recorded"  # the key of what a version recorded, in a version and its changes


def _changes(previous: dict[str, Any], config: dict[str, Any]) -> list[dict[str, Any]]:
    # A version that recorded nothing (the migration's v1 uses its tools as they are)
    # differs from the next in nothing it did not record.
    if previous and not previous[RECORDED]:
        previous = {**previous, RECORDED: config[RECORDED]}
    return snapshot_changes(previous, config)


def _shown(version: AssistantVersion, config: dict[str, Any], previous: dict[str, Any], live: bool) -> dict[str, Any]:
    return {"version": version.number, "label": f"v{version.number}", "note": version.note,
            "publishedBy": version.published_by, "publishedAt": version.created_at, "live": live,
            "assistant": {name: value for name, value in config.items() if name != RECORDED},
            RECORDED: config[RECORDED], "changes": _changes(previous, config)}


def version_history(*, assistant: Assistant) -> dict[str, Any]:
    """`{"versions": [newest first], "live": n | None, "draftChanges": [...]}`."""
    versions = list(AssistantVersion.objects.filter(assistant_id=assistant.pk).order_by("number"))
    shown: list[dict[str, Any]] = []
    previous: dict[str, Any] = {}
    for version in versions:
        config = {**shown_config(assistant_as_of(assistant=assistant, version=version)),
                  RECORDED: version.snapshot.get(PARTS) or {}}
        shown.append(_shown(version, config, previous, live=version is versions[-1]))
        previous = config
    changes: list[dict[str, Any]] = []
    if versions:  # the draft against the live version, with what publishing would record now
        draft = {**shown_config(assistant_as_of(assistant=assistant, version=None)),
                 RECORDED: references.snapshot_parts(assistant=assistant)}
        changes = _changes(previous, draft)
    return {"versions": shown[::-1], "live": versions[-1].number if versions else None, "draftChanges": changes}


def version_shown(*, assistant: Assistant, number: int) -> dict[str, Any] | None:
    """Version `number` as the history shows it, or None."""
    return next((version for version in version_history(assistant=assistant)["versions"]
                 if version["version"] == number), None)
