from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseNotAllowed, JsonResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.errors import ApiError
from console.tenants.admin_scoping import TenantScopedAdmin
from console.tenants.models import Tenant
from scripts_app import selectors, services
from scripts_app.analysis import analyze
from scripts_app.catalog import touchpoint
from scripts_app.forms import ScriptOverrideAdminForm
from scripts_app.highlighting import analysis_html
from scripts_app.models import ScriptOverride

# Where the effective text of a touchpoint comes from (selectors.DEFAULT, selectors.TENANT).
SOURCE_LABELS = {selectors.DEFAULT: _("catalog's default"), selectors.TENANT: _("tenant's own")}


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

    @admin.display(description=_("text"))
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
        wrap = self.admin_site.admin_view
        return [
            path("effective/", wrap(self.effective_view), name="scripts_app_effective"),
            path("preview.mp3", wrap(self.preview_view), name="scripts_app_preview"),
            path("analyse/", wrap(self.analyse_view), name="scripts_app_analyse"),
        ] + super().get_urls()

    def _tenant(self, request, params):
        """One of the member's tenants by `tenant_id` or `tenant` (slug); 404 for any
        other; else their first."""
        tenants = Tenant.objects.visible_to(request.user)
        if params.get("tenant_id", "").isdigit():
            return get_object_or_404(tenants, pk=params["tenant_id"])
        if params.get("tenant"):
            return get_object_or_404(tenants, slug=params["tenant"])
        tenant = tenants.order_by("slug").first()
        if tenant is None:
            raise Http404
        return tenant

    def preview_view(self, request):
        """The play button: the effective script (GET, `tenant` and `touchpoint`), or the
        text being edited (POST `text`), rendered as MP3 with sample values."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        params = request.POST if request.method == "POST" else request.GET
        tenant = self._tenant(request, params)
        try:
            rendered, _cached = services.script_preview(
                tenant=tenant, touchpoint_id=params.get("touchpoint", ""),
                text=params.get("text") if request.method == "POST" else None)
        except ApiError as exc:
            return JsonResponse({"error": {"code": exc.code, "message": exc.message, "details": exc.details}},
                                status=exc.status)
        return HttpResponse(rendered.mp3, content_type="audio/mpeg")

    def analyse_view(self, request):
        """Findings of a text as it is typed, stored nowhere (POST `text`, `touchpoint`)."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_view_permission(request):
            raise PermissionDenied
        text = request.POST.get("text", "")
        tp = touchpoint(request.POST.get("touchpoint", ""))
        problem = services.check_script_text(text)
        if problem:
            return JsonResponse({"findings": 0, "html": format_html('<p class="errornote">{}</p>', problem)})
        analysis = analyze(text, tp.max_seconds if tp else None)
        return JsonResponse({"findings": len(analysis["findings"]), "html": str(analysis_html(text, analysis))})

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
                    "source_label": SOURCE_LABELS.get(script.source, script.source),
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
            "title": gettext("Effective scripts of %(tenant)s") % {"tenant": tenant} if tenant
            else gettext("Effective scripts"),
            "tenants": tenants,
            "tenant": tenant,
            "rows": rows,
        }
        return TemplateResponse(request, "admin/scripts_app/effective_scripts.html", context)
