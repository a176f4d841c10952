from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.utils.translation import gettext_lazy as _

from console.credentials.models import ApiKey
from console.credentials.services import api_key_create, api_key_revoke
from console.tenants.admin_scoping import TenantScopedAdmin
from console.tenants.models import Tenant


class ApiKeyCreateForm(forms.Form):
    tenant = forms.ModelChoiceField(queryset=Tenant.objects.none(), label=_("tenant"))
    name = forms.CharField(max_length=100, required=False, label=_("name"),
                           help_text=_("What the key is for, e.g. 'CRM sync'."))

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["tenant"].queryset = Tenant.objects.visible_to(user)


@admin.register(ApiKey)
class ApiKeyAdmin(TenantScopedAdmin):
    list_display = ["prefix", "name", "tenant", "created_at", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["prefix", "name", "tenant__slug"]
    list_select_related = ["tenant"]
    fields = ["id", "tenant", "name", "prefix", "created_by", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["id", "tenant", "prefix", "created_by", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def add_view(self, request, form_url="", extra_context=None):
        """Creates the key through the service and shows it once, on this page only
        (never stored, never put into a message cookie)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ApiKeyCreateForm(request.POST or None, user=request.user)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "title": _("Create API key")}
        if request.method == "POST" and form.is_valid():
            api_key, raw_key = api_key_create(
                tenant=form.cleaned_data["tenant"], name=form.cleaned_data["name"], created_by=request.user
            )
            self.log_addition(request, api_key, [{"added": {}}])
            return TemplateResponse(
                request, "admin/credentials/apikey/created.html", {**context, "api_key": api_key, "raw_key": raw_key}
            )
        return TemplateResponse(request, "admin/credentials/apikey/create.html", {**context, "form": form})

    def get_actions(self, request):
        # No bulk delete: a key that was used stays (revoked) so the audit trail and
        # the request log keep naming it; an unused key can still be deleted alone.
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.last_used_at is not None:
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "_revoke" in request.POST and obj.revoked_at is None:
            api_key_revoke(api_key=obj)
            self.message_user(request, _("The key is revoked; requests with it are refused from now on."),
                              messages.SUCCESS)

    @admin.action(description=_("Revoke selected API keys"))
    def revoke(self, request, queryset):
        count = 0
        for api_key in queryset.filter(revoked_at__isnull=True):
            api_key_revoke(api_key=api_key)
            count += 1
        self.message_user(request, _("%(count)s key(s) revoked.") % {"count": count}, messages.SUCCESS)
