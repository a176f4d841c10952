"""Writes of assistants (API and admin alike), and the one check of a transfer."""
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import RestrictedError

from console.assistants.models import Assistant, AssistantVersion
from console.assistants.selectors import assistant_as_of, assistant_snapshot, assistant_version_of
from console.assistants.serializers import shown_config
from console.assistants.validation import assistant_values
from console.errors import ApiError, Conflict, NotFound
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, mask, to_e164
from console.quotas import quota_take
from console.tenants.models import Tenant


class AssistantInUse(Conflict):
    code = "assistant_in_use"
    message = ("Phone numbers still answer with this assistant (details.numbers). Give them another assistant "
               "(PATCH /v2/numbers/{id} {\"assistant\": …}) or none first, then delete it.")


class TransferRefused(ApiError):
    """A transfer to a number that is not one of the assistant's transfer targets."""

    status, code = 400, "transfer_refused"
    message = "Calls are transferred only to the assistant's transfer targets."


@transaction.atomic
def assistant_create(*, tenant: Tenant, data: dict[str, Any]) -> Assistant:
    """A new assistant from the API's fields (`data`, checked here); 409
    `tenant_limit_reached` past TENANT_MAX_ASSISTANTS."""
    quota_take(tenant=tenant, name="assistants")
    return Assistant.objects.create(tenant=tenant, **assistant_values(tenant=tenant, data=data))


@transaction.atomic
def assistant_update(*, assistant: Assistant, data: dict[str, Any]) -> Assistant:
    """Changes the fields `data` names (within `model` and `analysis`, the keys it names)."""
    values = assistant_values(tenant=assistant.tenant, data=data, instance=assistant)
    for name, value in values.items():
        setattr(assistant, name, value)
    assistant.save(update_fields=[*values, "updated_at"])
    return assistant


def _numbers_of(assistant: Assistant) -> list[dict[str, Any]]:
    return list(PhoneNumber.objects.filter(assistant=assistant).order_by("e164").values("id", "e164"))


@transaction.atomic
def assistant_delete(*, assistant: Assistant) -> None:
    """Deletes an assistant no phone number answers with; else AssistantInUse (409)
    naming the numbers. The numbers' reference is RESTRICT, so a number given to the
    assistant at the same moment makes the delete fail in the database, not dangle."""
    numbers = _numbers_of(assistant)
    if numbers:
        raise AssistantInUse(details={"numbers": numbers})
    try:
        with transaction.atomic():
            assistant.delete()
    except RestrictedError:
        raise AssistantInUse(details={"numbers": _numbers_of(assistant)}) from None


def assistant_transfer_target(*, assistant: Assistant, number: object) -> dict[str, Any]:
    """The transfer target `{"name", "e164"}` of `assistant` that `number` (any format
    a person or a model writes) names; TransferRefused for every other number, for an
    assistant without `transfer_call` among its tools, or without targets. The one
    check before any transfer: whatever a caller, a knowledge passage or a tool's
    answer put into the model's request, no other number is reached."""
    if "transfer_call" not in (assistant.tools or []):
        raise TransferRefused("This assistant may not transfer calls (transfer_call is not among its tools).")
    try:
        e164 = to_e164(str(number))
    except InvalidPhoneNumber:
        e164 = None
    target = assistant.transfer_target_for(e164) if e164 else None
    if target is None:
        names = ", ".join(t["name"] for t in assistant.transfer_targets) or "none"
        raise TransferRefused(f"{mask(e164) if e164 else 'That number'} is not a transfer target of this assistant "
                              f"(targets: {names}).", details={"number": [str(number)[:40]]})
    return dict(target)


def assistant_transfer_target_named(*, assistant: Assistant, name: object) -> dict[str, Any]:
    """The transfer target called `name` (case and spaces ignored), or TransferRefused:
    for a model that names the target (\"Zentrale\") rather than its number."""
    wanted = " ".join(str(name).split()).casefold()
    for target in assistant.transfer_targets or []:
        if " ".join(target["name"].split()).casefold() == wanted:
            return assistant_transfer_target(assistant=assistant, number=target["e164"])
    return assistant_transfer_target(assistant=assistant, number=name)


# --- Versions (docs/api.md, "Versions") ---------------------------------------------------

MAX_NOTE = 500


class UnknownVersion(NotFound):
    code = "unknown_version"
    message = "This assistant has no version with this number (GET /v2/assistants/{id}/versions lists them)."


class ScenariosFailed(Conflict):
    code = "scenarios_failed"
    message = ("A test case of this assistant fails with its draft (details.failed; details.run is the run): fix "
               "the draft or the test case, or publish anyway with {\"force\": true}.")


# What publishing asks first (agent_app registers its scenarios' run): each check gets
# the assistant and returns None (nothing failed) or the refusal's details.
_publish_checks: list[Callable[[Assistant], dict[str, Any] | None]] = []


def publish_check_register(check: Callable[[Assistant], dict[str, Any] | None]) -> None:
    """Registers a check publishing runs first (from an app's ready())."""
    if check not in _publish_checks:
        _publish_checks.append(check)


def assistant_publish(*, assistant: Assistant, actor: str, note: str = "", force: bool = False) -> AssistantVersion:
    """The draft as the assistant's next version (v1, v2, …): from now on what its
    numbers (those not pinned to another), campaigns and the web widget answer with.
    First its test cases are played (the registered checks): one that fails refuses
    the publish (ScenariosFailed, 409), unless `force`, which the version's note records."""
    for check in _publish_checks:
        failed = check(assistant)
        if failed is None:
            continue
        if not force:
            raise ScenariosFailed(details=failed)
        names = ", ".join(item["name"] for item in failed.get("failed", []))
        note = f"{note} [force: veröffentlicht trotz fehlgeschlagener Testfälle: {names}]".strip()
    return _published(assistant=assistant, actor=actor, note=note)


@transaction.atomic
def _published(*, assistant: Assistant, actor: str, note: str) -> AssistantVersion:
    """The version itself; the assistant's row is locked, so two publishes get two numbers."""
    locked = Assistant.objects.select_for_update().get(pk=assistant.pk)
    quota_take(tenant=locked.tenant, name="versions")
    latest = AssistantVersion.objects.filter(assistant=locked).order_by("-number").values_list("number", flat=True)
    return AssistantVersion.objects.create(
        tenant_id=locked.tenant_id, assistant=locked, number=(latest.first() or 0) + 1,
        snapshot=assistant_snapshot(locked), note=note[-MAX_NOTE:] if len(note) > MAX_NOTE else note, published_by=actor[:160])


@transaction.atomic
def assistant_restore(*, assistant: Assistant, number: int) -> Assistant:
    """Copies version `number` back into the draft (nothing is published: the numbers
    answer as before until the draft is published again); UnknownVersion (404). The
    version's fields are checked as a PATCH's are, so the draft never names what is
    gone since (a deleted HTTP tool or document: 400 naming it)."""
    version = assistant_version_of(assistant=assistant, number=number)
    if version is None:
        raise UnknownVersion()
    config = shown_config(assistant_as_of(assistant=assistant, version=version))
    values = assistant_values(tenant=assistant.tenant, data=config, instance=assistant)
    for name, value in values.items():
        setattr(assistant, name, value)
    assistant.save(update_fields=[*values, "updated_at"])
    assistant.version = None
    return assistant
