from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import path, reverse

from console.tenants.admin_scoping import TenantScopedAdmin
from console.tenants.models import Tenant
from scripts_app import selectors
from scripts_app.catalog import touchpoint
from scripts_app.forms import ScriptOverrideAdminForm
from scripts_app.highlighting import analysis_html
from scripts_app.models import ScriptOverride


@admin.register(ScriptOverride)
class ScriptOverrideAdmin(TenantScopedAdmin):
    form = ScriptOverrideAdminForm
    list_display = ["touchpoint_id", "tenant", "text_start", "updated_at"]
    list_filter = ["touchpoint_id"]
    search_fields = ["touchpoint_id", "text", "tenant__slug"]
    list_select_related = ["tenant"]
    readonly_fields = ["created_at", "updated_at"]
    fields = ["tenant", "touchpoint_id", "text", "save_despite_findings", "created_at", "updated_at"]
    change_form_template = "admin/scripts_app/scriptoverride/change_form.html"
    change_list_template = "admin/scripts_app/scriptoverride/change_list.html"

    @admin.display(description="text")
    def text_start(self, obj):
        return obj.text if len(obj.text) <= 80 else obj.text[:79] + "…"

    def get_changeform_initial_data(self, request):
        # "Override" links of the effective-scripts page pre-fill tenant, touchpoint and text.
        initial = super().get_changeform_initial_data(request)
        if "touchpoint_id" in initial and "text" not in initial:
            tp = touchpoint(initial["touchpoint_id"])
            if tp:
                initial["text"] = tp.text
        return initial

    def get_urls(self):
        return [
            path("effective/", self.admin_site.admin_view(self.effective_view), name="scripts_app_effective"),
        ] + super().get_urls()

    def effective_view(self, request):
        """Every touchpoint as a tenant hears it, with source and findings."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        tenants = list(Tenant.objects.visible_to(request.user))
        tenant = next((t for t in tenants if t.slug == request.GET.get("tenant")), tenants[0] if tenants else None)
        rows = []
        if tenant is not None:
            override_ids = dict(
                ScriptOverride.objects.for_tenant(tenant).values_list("touchpoint_id", "pk")
            )
            for script in selectors.effective_scripts(tenant):
                analysis = script.analysis()
                override_pk = override_ids.get(script.touchpoint_id)
                rows.append({
                    "script": script,
                    "analysis": analysis,
                    "html": analysis_html(script.text, analysis),
                    "edit_url": (
                        reverse("admin:scripts_app_scriptoverride_change", args=[override_pk]) if override_pk
                        else reverse("admin:scripts_app_scriptoverride_add")
                        + f"?tenant={tenant.pk}&touchpoint_id={script.touchpoint_id}"
                    ),
                })
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"Effective scripts of {tenant}" if tenant else "Effective scripts",
            "tenants": tenants,
            "tenant": tenant,
            "rows": rows,
        }
        return TemplateResponse(request, "admin/scripts_app/effective_scripts.html", context)
