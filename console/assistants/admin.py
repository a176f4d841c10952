from django.contrib import admin

from console.assistants.models import Assistant
from console.tenants.admin_scoping import TenantScopedAdmin


@admin.register(Assistant)
class AssistantAdmin(TenantScopedAdmin):
    list_display = ["name", "tenant", "language", "voice", "id", "created_at"]
    list_filter = ["language"]
    search_fields = ["name", "id", "tenant__slug"]
    readonly_fields = ["id", "created_at", "updated_at"]
    list_select_related = ["tenant"]
