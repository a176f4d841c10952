from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from console.errors import ApiError
from console.tenants.admin_scoping import TenantScopedAdmin
from tools_app.errors import ToolLimitReached
from tools_app.models import HttpTool
from tools_app.services import (
    assistants_using,
    http_tool_create,
    http_tool_room_check,
    http_tool_update,
    http_tool_values,
)
from webhooks_app import signing

FORM_FIELD_OF = {"name": "name", "description": "description", "parameters": "parameters", "url": "url",
                 "timeoutMs": "timeout_ms"}


class HttpToolForm(forms.ModelForm):
    """The same fields as POST /v2/tools, checked by the same code."""

    parameters = forms.JSONField(
        label=capfirst(_("parameters (JSON Schema)")), initial={"type": "object", "properties": {}},
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text=_('What the language model sends along: a JSON Schema with "type": "object".'))
    url = forms.URLField(label=capfirst(_("address (https)")), max_length=2000, assume_scheme="https",
                         help_text=_("A fixed https address; every call is signed like a webhook "
                                     "(Standard Webhooks)."))

    class Meta:
        model = HttpTool
        fields = ["tenant", "name", "description", "parameters", "url", "timeout_ms"]
        help_texts = {"timeout_ms": _("100 to 5000 milliseconds.")}

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        if tenant is None or self.errors:
            return cleaned
        # The API's fields, which the admin saves through the API's services.
        self.api_data = {"name": cleaned.get("name"), "description": cleaned.get("description") or "",
                         "parameters": cleaned.get("parameters"), "url": cleaned.get("url"),
                         "timeoutMs": cleaned.get("timeout_ms")}
        adding = self.instance._state.adding  # (a new tool has its id already: the field's default)
        try:
            http_tool_values(tenant=tenant, data=self.api_data, instance=None if adding else self.instance)
        except ApiError as exc:
            for field, messages in exc.details.items():
                self.add_error(FORM_FIELD_OF.get(field), ValidationError(list(messages)))
        if adding:
            try:
                http_tool_room_check(tenant=tenant)
            except ToolLimitReached as exc:
                self.add_error(None, _("The tenant has as many HTTP tools as it may have (%(max)s): delete one it "
                                       "no longer needs, or change one instead.") % {"max": exc.details["maxTools"]})
        return cleaned


@admin.register(HttpTool)
class HttpToolAdmin(TenantScopedAdmin):
    form = HttpToolForm
    list_display = ["name", "url", "timeout_ms", "tenant", "updated_at"]
    list_filter = ["tenant"]
    search_fields = ["name", "id", "url"]
    list_select_related = ["tenant"]
    readonly_fields = ["id", "used_by", "created_at", "updated_at"]
    fields = ["id", "tenant", "name", "description", "parameters", "url", "timeout_ms", "used_by", "created_at",
              "updated_at"]

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "tenant"] if obj is not None else self.readonly_fields

    @admin.display(description=_("used by"))
    def used_by(self, tool):
        return ", ".join(assistant["name"] for assistant in assistants_using(tool)) or "—" if tool.pk else "—"

    def save_model(self, request: HttpRequest, obj: HttpTool, form: HttpToolForm, change: bool) -> None:
        """Through the API's services, with their checks (the per-tenant limit among
        them); the admin goes on with `obj` (its message, the audit entry, the page)."""
        if change:
            http_tool_update(tool=obj, data=form.api_data)
            return
        tool, _secret = http_tool_create(tenant=form.cleaned_data["tenant"], data=form.api_data)
        for field in HttpTool._meta.concrete_fields:
            setattr(obj, field.attname, getattr(tool, field.attname))
        obj._state.adding, obj._state.db = False, tool._state.db

    def response_add(self, request, obj, post_url_continue=None):
        """The secret is shown once, on this page only (never stored, never in a message cookie)."""
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "tool": obj,
                   "title": _("New HTTP tool"), "secret": signing.secret_for(obj.pk, obj.secret_nonce)}
        return TemplateResponse(request, "admin/tools_app/httptool/created.html", context)

    def delete_queryset(self, request, queryset):
        kept = [tool for tool in queryset if assistants_using(tool)]
        if kept:
            self.message_user(request, _("Not deleted, because assistants use them: %(tools)s")
                              % {"tools": ", ".join(tool.name for tool in kept)}, messages.WARNING)
        super().delete_queryset(request, queryset.exclude(pk__in=[tool.pk for tool in kept]))

    def has_delete_permission(self, request, obj=None):
        # A tool an assistant uses stays until it is taken out of the assistant's tools.
        if obj is not None and assistants_using(obj):
            return False
        return super().has_delete_permission(request, obj)
