"""Reads of assistants and their versions; every query starts from the tenant.

An assistant's *draft* is its row (what the admin and PATCH edit); its published
versions are snapshots (`AssistantVersion`). What answers a call is the *effective
config* (`assistant_answering`): the version a number pins, else the latest
published one, else — an assistant never published — the draft. It is an
`Assistant` like the row (unsaved; its `version` says which), so whatever reads an
assistant (the mind, the tools, a transfer, the analysis) reads the version."""
import difflib
from typing import Any

from django.db.models import Case, When

from console.assistants import references
from console.assistants.models import Assistant, AssistantVersion
from console.tenants.models import Tenant

# What a snapshot leaves out: who the assistant is, not how it behaves. Every other
# field of the model is versioned, a field added later too (tests/assistants).
UNVERSIONED = frozenset({"id", "tenant", "created_at", "updated_at"})


def versioned_fields() -> list[str]:
    """The attribute names of the assistant's fields a version holds."""
    return [field.attname for field in Assistant._meta.concrete_fields if field.name not in UNVERSIONED]


# The snapshot's key of what other apps record (references.snapshot_parts); no field's name.
PARTS = "_parts"


def assistant_snapshot(assistant: Assistant) -> dict[str, Any]:
    """The JSON snapshot of the assistant's behaviour: every versioned field, and under
    PARTS what the apps that own its references record (its HTTP tools' definitions)."""
    return {**{name: getattr(assistant, name) for name in versioned_fields()},
            PARTS: references.snapshot_parts(assistant=assistant)}


def assistant_of(*, tenant: Tenant, assistant_id: str | None) -> Assistant | None:
    """The tenant's assistant with this id, or None (another tenant's is None too)."""
    if not assistant_id:
        return None
    return Assistant.objects.for_tenant(tenant).filter(pk=assistant_id).first()


def assistant_as_of(*, assistant: Assistant, version: AssistantVersion | None) -> Assistant:
    """The assistant as `version` has it (an unsaved copy; the draft when None). A field
    the snapshot lacks (added after it was published) keeps the model's default."""
    if version is None:
        assistant.version = None
        return assistant
    fields = set(versioned_fields())
    config = Assistant(id=assistant.pk, tenant_id=assistant.tenant_id, created_at=assistant.created_at,
                       updated_at=version.created_at,
                       **{name: value for name, value in version.snapshot.items() if name in fields})
    config.version = version.number
    config.snapshot_parts = version.snapshot.get(PARTS) or {}
    return config


def assistant_version_of(*, assistant: Assistant, number: int | None = None) -> AssistantVersion | None:
    """The assistant's version `number`, or without a number its latest; None when
    there is none."""
    versions = AssistantVersion.objects.filter(assistant_id=assistant.pk)
    if number is not None:
        return versions.filter(number=number).first()
    return versions.order_by("-number").first()


def assistant_live_number(*, assistant_id: str, pinned: int | None = None) -> int | None:
    """The number of the version `assistant_answering` gives, in one query: `pinned` if
    the assistant has it, else its latest; None: never published (the draft)."""
    versions = AssistantVersion.objects.filter(assistant_id=assistant_id)
    if pinned is not None:
        versions = versions.annotate(pin=Case(When(number=pinned, then=1), default=0)).order_by("-pin", "-number")
    else:
        versions = versions.order_by("-number")
    return versions.values_list("number", flat=True).first()


def assistant_answering(*, assistant: Assistant | None, pinned: int | None = None) -> Assistant | None:
    """The effective config of `assistant` for a call: the version `pinned` (a
    number's pin) if it exists, else the latest published version, else the draft."""
    if assistant is None:
        return None
    version = assistant_version_of(assistant=assistant, number=pinned) if pinned is not None else None
    return assistant_as_of(assistant=assistant, version=version or assistant_version_of(assistant=assistant))


def assistant_of_call(*, assistant: Assistant, version: int | None) -> Assistant:
    """The assistant as a call ran with it (`Call.assistant_version`; None: its draft)."""
    found = assistant_version_of(assistant=assistant, number=version) if version is not None else None
    return assistant_as_of(assistant=assistant, version=found)


def snapshot_changes(before: dict[str, Any], after: dict[str, Any], *, nested: bool = True) -> list[dict[str, Any]]:
    """What changed between two shown configs (`{"field", "before", "after"}`, nested
    objects by their path: `model.lane`); `instructions` as a unified line diff
    (`"diff"`) instead of both texts."""
    changes: list[dict[str, Any]] = []
    for name in [*after, *(name for name in before if name not in after)]:  # a key removed is a change too
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if nested and isinstance(new, dict) and isinstance(old, dict):
            changes += [{**change, "field": f"{name}.{change['field']}"}
                        for change in snapshot_changes(old, new, nested=False)]
        elif name == "instructions":
            lines = difflib.unified_diff(str(old or "").splitlines(), str(new or "").splitlines(),
                                         "vorher", "nachher", lineterm="")
            changes.append({"field": name, "diff": "\n".join(lines)})
        else:
            changes.append({"field": name, "before": old, "after": new})
    return changes
