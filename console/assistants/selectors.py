"""Reads of assistants; every query starts from the tenant."""
from typing import Any

from console.assistants.models import Assistant
from console.compiled import CompiledQuery
from console.tenants.models import Tenant

# The columns of an assistant in the Console API (serializers.AssistantSerializer).
ASSISTANT_COLUMNS = ("id", "name", "description", "language", "voice", "created_at", "updated_at")

_assistant_rows = CompiledQuery(
    lambda tenant_id: Assistant.objects.for_tenant(tenant_id).values_list(*ASSISTANT_COLUMNS), datetimes_as_text=True)


def assistant_rows(*, tenant: Tenant) -> list[tuple[Any, ...]]:
    """The tenant's assistants in list order, as tuples of ASSISTANT_COLUMNS (timestamps
    as the API writes them): one query."""
    return _assistant_rows(tenant.id)
