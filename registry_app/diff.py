"""The difference between two registry documents: lanes added, removed, and changed
field by field (nested objects such as `cost` and `params` by their dotted path)."""
from dataclasses import dataclass, field

_MISSING = object()


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: object
    new: object

    def describe(self):
        return f"{self.field}: {_show(self.old)} → {_show(self.new)}"


@dataclass
class RegistryDiff:
    added: list = field(default_factory=list)  # lane ids, in the newer document's order
    removed: list = field(default_factory=list)  # lane ids, in the older document's order
    changed: dict = field(default_factory=dict)  # lane id → [FieldChange]
    document: list = field(default_factory=list)  # [FieldChange] of the top-level fields

    @property
    def empty(self):
        return not (self.added or self.removed or self.changed or self.document)

    def as_json(self):
        def changes(items):
            return [{"field": c.field, "old": _plain(c.old), "new": _plain(c.new)} for c in items]
        return {
            "added": self.added,
            "removed": self.removed,
            "changed": {lane_id: changes(items) for lane_id, items in self.changed.items()},
            "document": changes(self.document),
        }

    def lines(self):
        """Human-readable lines, as `registry_diff` prints them."""
        out = [f"document {change.describe()}" for change in self.document]
        out += [f"+ {lane_id}" for lane_id in self.added]
        out += [f"- {lane_id}" for lane_id in self.removed]
        for lane_id, items in self.changed.items():
            out.append(f"~ {lane_id}")
            out += [f"    {change.describe()}" for change in items]
        return out


def _plain(value):
    return None if value is _MISSING else value


def _show(value):
    return "(absent)" if value is _MISSING else repr(value)


def field_changes(old, new, prefix=""):
    """Changes between two JSON objects; objects are compared key by key, other values whole."""
    changes = []
    for key in list(old) + [k for k in new if k not in old]:
        before, after = old.get(key, _MISSING), new.get(key, _MISSING)
        path = f"{prefix}{key}"
        if isinstance(before, dict) and isinstance(after, dict):
            changes.extend(field_changes(before, after, prefix=f"{path}."))
        elif before != after or type(before) is not type(after):
            changes.append(FieldChange(path, before, after))
    return changes


def registry_diff(old_document, new_document):
    old_lanes = {entry["id"]: entry for entry in old_document.get("models", [])}
    new_lanes = {entry["id"]: entry for entry in new_document.get("models", [])}
    diff = RegistryDiff(
        added=[lane_id for lane_id in new_lanes if lane_id not in old_lanes],
        removed=[lane_id for lane_id in old_lanes if lane_id not in new_lanes],
        document=field_changes(
            {k: v for k, v in old_document.items() if k != "models"},
            {k: v for k, v in new_document.items() if k != "models"},
        ),
    )
    for lane_id, entry in new_lanes.items():
        if lane_id in old_lanes:
            changes = field_changes(old_lanes[lane_id], entry)
            if changes:
                diff.changed[lane_id] = changes
    return diff
