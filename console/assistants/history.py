"""An assistant's version history as the API and the admin show it: each version's
config in the API's field names, what it changed against the previous one, and what
the draft changes against the live version (docs/api.md, "Versions")."""
from typing import Any

from console.assistants.models import Assistant, AssistantVersion
from console.assistants.selectors import assistant_as_of, snapshot_changes
from console.assistants.serializers import shown_config


def _shown(version: AssistantVersion, config: dict[str, Any], previous: dict[str, Any], live: bool) -> dict[str, Any]:
    return {"version": version.number, "label": f"v{version.number}", "note": version.note,
            "publishedBy": version.published_by, "publishedAt": version.created_at, "live": live,
            "assistant": config, "changes": snapshot_changes(previous, config)}


def version_history(*, assistant: Assistant) -> dict[str, Any]:
    """`{"versions": [newest first], "live": n | None, "draftChanges": [...]}`."""
    versions = list(AssistantVersion.objects.filter(assistant_id=assistant.pk).order_by("number"))
    shown: list[dict[str, Any]] = []
    previous: dict[str, Any] = {}
    for version in versions:
        config = shown_config(assistant_as_of(assistant=assistant, version=version))
        shown.append(_shown(version, config, previous, live=version is versions[-1]))
        previous = config
    draft = shown_config(assistant_as_of(assistant=assistant, version=None))
    return {"versions": shown[::-1], "live": versions[-1].number if versions else None,
            "draftChanges": snapshot_changes(previous, draft) if versions else []}


def version_shown(*, assistant: Assistant, number: int) -> dict[str, Any] | None:
    """Version `number` as the history shows it, or None."""
    return next((version for version in version_history(assistant=assistant)["versions"]
                 if version["version"] == number), None)
