from django.contrib import admin

from console.numbers.forms import PhoneNumberAdminForm
from console.numbers.models import PhoneNumber
from console.tenants.admin_scoping import TenantScopedAdmin


@admin.register(PhoneNumber)
class PhoneNumberAdmin(TenantScopedAdmin):
    form = PhoneNumberAdminForm
    list_display = ["e164", "label", "tenant", "assistant", "assistant_version", "id"]
    search_fields = ["e164", "label", "id", "tenant__slug"]
    readonly_fields = ["id", "created_at"]
    list_select_related = ["tenant", "assistant"]
