from typing import Any

from django.db import IntegrityError, transaction

from console.assistants.models import Assistant, AssistantVersion
from console.errors import NumberTaken, ValidationFailed
from console.numbers.models import PhoneNumber
from console.quotas import quota_take
from console.tenants.models import Tenant


def _assistant_of(tenant: Tenant, assistant_id: str | None) -> Assistant | None:
    if assistant_id is None:
        return None
    # Scoped to the tenant: another tenant's assistant is "no such assistant".
    assistant = Assistant.objects.for_tenant(tenant).filter(pk=assistant_id).first()
    if assistant is None:
        raise ValidationFailed.field("assistant", f"No assistant '{assistant_id}' in this tenant.")
    return assistant


def _pinned(assistant: Assistant | None, version: int | None) -> int | None:
    """`version` if `assistant` has published it (a 400 on `assistantVersion` if not)."""
    if version is None:
        return None
    if assistant is None or not AssistantVersion.objects.filter(assistant=assistant, number=version).exists():
        raise ValidationFailed.field("assistantVersion", f"The number's assistant has no published version {version}.")
    return version


def number_check(*, tenant: Tenant, e164: str | None = None, assistant_id: str | None = None,
                 assistant_version: int | None = None) -> Assistant | None:
    """The checks of `number_create` (and, without `e164`, of `number_update`), which
    the admin's form asks too before it saves: the assistant is one of the tenant's
    (ValidationFailed on `assistant`), the pinned version one it published
    (ValidationFailed on `assistantVersion`), and no tenant holds the number
    (NumberTaken, 409). Returns the assistant."""
    assistant = _assistant_of(tenant, assistant_id)
    _pinned(assistant, assistant_version)
    if e164 is not None and PhoneNumber.objects.filter(e164=e164).exists():
        raise NumberTaken(details={"e164": e164})
    return assistant


def number_create(*, tenant: Tenant, e164: str, label: str = "", assistant_id: str | None = None,
                  assistant_version: int | None = None) -> PhoneNumber:
    assistant = number_check(tenant=tenant, e164=e164, assistant_id=assistant_id, assistant_version=assistant_version)
    try:
        with transaction.atomic():
            quota_take(tenant=tenant, name="numbers")
            return PhoneNumber.objects.create(tenant=tenant, e164=e164, label=label, assistant=assistant,
                                              assistant_version=assistant_version)
    except IntegrityError:
        # Lost a race with a concurrent insert of the same number.
        raise NumberTaken(details={"e164": e164}) from None


@transaction.atomic
def number_update(*, number: PhoneNumber, **changes: Any) -> PhoneNumber:
    fields = []
    if "label" in changes:
        number.label = changes["label"]
        fields.append("label")
    if "assistant" in changes:
        number.assistant = _assistant_of(number.tenant, changes["assistant"])
        fields.append("assistant")
    if "assistant" in changes or "assistant_version" in changes:
        # A new assistant clears the pin (another assistant's v3 is not this one's).
        number.assistant_version = _pinned(number.assistant, changes.get("assistant_version"))
        fields.append("assistant_version")
    if fields:
        number.save(update_fields=fields)
    return number


@transaction.atomic
def number_delete(*, number: PhoneNumber) -> None:
    number.delete()
