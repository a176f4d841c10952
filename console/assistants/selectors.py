"""Reads of assistants; every query starts from the tenant."""
from typing import Any

from console.assistants.models import Assistant
from console.compiled import CompiledQuery
from console.tenants.models import Tenant

# The columns of an assistant in the Console API (serializers.AssistantSerializer).
ASSISTANT_COLUMNS = ("id", "name", "description", "language", "voice", "instructions", "opening_touchpoint", "tools",
                     "knowledge", "model_lane", "model_temperature", "model_max_tokens", "transfer_targets",
                     "analysis_summary", "analysis_schema", "analysis_success_criteria", "max_duration_sec",
                     "silence_timeout_sec", "end_call_phrases", "created_at", "updated_at")

_assistant_rows = CompiledQuery(
    lambda tenant_id: Assistant.objects.for_tenant(tenant_id).values_list(*ASSISTANT_COLUMNS), datetimes_as_text=True)


def assistant_rows(*, tenant: Tenant) -> list[tuple[Any, ...]]:
    """The tenant's assistants in list order, as tuples of ASSISTANT_COLUMNS (timestamps
    as the API writes them): one query."""
    return _assistant_rows(tenant.id)


def assistant_of(*, tenant: Tenant, assistant_id: str | None) -> Assistant | None:
    """The tenant's assistant with this id, or None (another tenant's is None too)."""
    if not assistant_id:
        return None
    return Assistant.objects.for_tenant(tenant).filter(pk=assistant_id).first()
