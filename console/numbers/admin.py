from django.contrib import admin
from django.http import HttpRequest

from console.numbers.forms import PhoneNumberAdminForm
from console.numbers.models import PhoneNumber
from console.numbers.services import number_create, number_update
from console.tenants.admin_scoping import TenantScopedAdmin


@admin.register(PhoneNumber)
class PhoneNumberAdmin(TenantScopedAdmin):
    form = PhoneNumberAdminForm
    list_display = ["e164", "label", "tenant", "assistant", "assistant_version", "id"]
    search_fields = ["e164", "label", "id", "tenant__slug"]
    readonly_fields = ["id", "created_at"]
    list_select_related = ["tenant", "assistant"]

    def get_readonly_fields(self, request: HttpRequest, obj: PhoneNumber | None = None) -> list[str]:
        # The number routes inbound calls to its tenant: replaced by deleting and
        # adding one, never edited in place (as in PATCH /v2/numbers/{id}).
        return [*self.readonly_fields, "tenant", "e164"] if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: PhoneNumber, form: PhoneNumberAdminForm, change: bool) -> None:
        """Through the API's services; the admin goes on with `obj`."""
        if change:
            number_update(number=obj, label=obj.label, assistant=obj.assistant_id,
                          assistant_version=obj.assistant_version)
            return
        number = number_create(tenant=obj.tenant, e164=obj.e164, label=obj.label, assistant_id=obj.assistant_id,
                               assistant_version=obj.assistant_version)
        obj.pk, obj.created_at, obj._state.adding = number.pk, number.created_at, False
