"""The admin's "Kalender": connect, change and remove calendars through the API's
services (the same checks, the connection check on save among them)."""
from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from calendars_app import services
from calendars_app.kinds.fields import KIND_FIELDS
from calendars_app.models import Appointment, Calendar
from console.errors import ApiError
from console.tenants.admin_scoping import TenantScopedAdmin

LABELS = {field.name: field.label for fields in KIND_FIELDS.values() for field in fields}
SECRET = {field.name for fields in KIND_FIELDS.values() for field in fields if field.secret}


class _CalendarForm(forms.ModelForm):
    """The API's fields; the secrets are written, never shown (left empty: kept)."""

    class Meta:
        model = Calendar
        fields = ["tenant", "name", "kind"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        current = {**(self.instance.settings or {}), "url": self.instance.url} if self.instance.pk else {}
        for name in LABELS:
            if name in SECRET:
                if self.instance.pk:
                    self.fields[name].help_text = _("Empty: kept as stored.")
            else:
                self.fields[name].initial = current.get(name, "")

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        if tenant is None or self.errors:
            return cleaned
        kind = cleaned.get("kind") or self.instance.kind
        data = {"name": cleaned.get("name"), "kind": kind}
        data.update({field.name: cleaned.get(field.name) or "" for field in KIND_FIELDS.get(kind, ())})
        self.api_data = data
        try:
            if self.instance.pk:
                self.saved = services.calendar_update(calendar=self.instance, data=data)
            else:
                self.saved = services.calendar_create(tenant=tenant, data=data)
        except ApiError as exc:
            for field, messages in exc.details.items():
                if isinstance(messages, list):
                    self.add_error(field if field in self.fields else None, ValidationError(list(messages)))
            if not exc.details or "reason" in exc.details:
                self.add_error(None, exc.message)
        return cleaned


# The kinds' fields (kinds/fields.py), declared on the form so that the admin knows them.
CalendarForm = type("CalendarForm", (_CalendarForm,), {
    name: forms.CharField(label=label, required=False, max_length=2000,
                          widget=forms.PasswordInput(render_value=False) if name in SECRET else forms.TextInput())
    for name, label in LABELS.items()})


@admin.register(Calendar)
class CalendarAdmin(TenantScopedAdmin):
    form = CalendarForm
    list_display = ["name", "kind", "tenant", "checked_at", "updated_at"]
    list_filter = ["kind"]
    search_fields = ["name", "id"]
    list_select_related = ["tenant"]
    readonly_fields = ["id", "checked_at", "created_at", "updated_at"]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["id", "tenant", "name", "kind", *LABELS, "checked_at", "created_at", "updated_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*self.readonly_fields, "tenant", "kind"] if obj is not None else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Calendar, form: Any, change: bool) -> None:
        """Saved by the form's clean through the services (after their check)."""
        saved = form.saved
        for field in Calendar._meta.concrete_fields:
            setattr(obj, field.attname, getattr(saved, field.attname))
        obj._state.adding, obj._state.db = False, saved._state.db


@admin.register(Appointment)
class AppointmentAdmin(TenantScopedAdmin):
    list_display = ["starts_at", "type_name", "caller_name", "caller_e164", "status", "calendar", "tenant"]
    list_filter = ["status"]
    search_fields = ["caller_name", "caller_e164", "id", "call_id"]
    list_select_related = ["tenant", "calendar"]
    readonly_fields = ["id", "tenant", "calendar", "assistant_id", "type_name", "starts_at", "ends_at",
                       "caller_e164", "caller_name", "call_id", "status", "external_id", "created_at", "updated_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
