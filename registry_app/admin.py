"""The registry in the admin: read-only, because the JSON document is the source of
truth (change it and run `manage.py load_registry`)."""
import json

from django.contrib import admin
from django.db.models import OuterRef, Subquery
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.tenants.admin_scoping import ReadOnlyAdminMixin
from registry_app import selectors
from registry_app.models import (
    FAILURE_OUTCOMES,
    IntegrationLayer,
    Lane,
    LaneCooldown,
    LaneError,
    LaneHealth,
    RegistryVersion,
)
from registry_app.routing import price_group


class ReadOnlyAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    pass


def _pretty_json(value):
    return format_html("<pre>{}</pre>", json.dumps(value, ensure_ascii=False, indent=2))


@admin.register(Lane)
class LaneAdmin(ReadOnlyAdmin):
    list_display = ["lane_id", "name", "capability", "provider", "hosting", "status", "last_error", "price",
                    "priority", "quality_tier", "latency_class"]
    list_filter = ["capability", "status", "hosting", "provider", "quality_tier", "latency_class"]
    search_fields = ["lane_id", "name", "provider"]
    list_per_page = 100
    fieldsets = [
        (None, {"fields": ["lane_id", "name", "capability", "provider", "status", "last_error", "priority",
                           "quality_tier", "latency_class", "version"]}),
        (_("Access"), {"fields": ["hosting", "access", "endpoint", "health", "probe"]}),
        (_("Cost"), {"fields": ["cost_model", "cost_unit", "price"]}),
        (_("Parameters"), {"fields": ["params_pretty"]}),
        (_("Test and source"), {"fields": ["test", "source", "notes"]}),
    ]

    def get_queryset(self, request):
        errors = LaneError.objects.filter(lane_id=OuterRef("lane_id"))
        return super().get_queryset(request).annotate(
            error_outcome=Subquery(errors.values("outcome")), error_detail=Subquery(errors.values("detail")),
            error_at=Subquery(errors.values("failed_at")))

    @admin.display(description=_("last error"))
    def last_error(self, lane):
        """The lane's last failed call (a wrong key: the provider's 401), or none."""
        if not getattr(lane, "error_outcome", None):
            return gettext("none")
        return gettext("%(outcome)s at %(time)s UTC: %(detail)s") % {
            "outcome": dict(FAILURE_OUTCOMES).get(lane.error_outcome, lane.error_outcome), "time": f"{lane.error_at:%Y-%m-%d %H:%M:%S}", "detail": lane.error_detail}

    @admin.display(description=_("price"), ordering="cost_eur")
    def price(self, lane):
        group = price_group(lane.cost_eur)
        if group == 2:
            return gettext("unknown (never counted as free)")
        if group == 0:
            return gettext("0 EUR (free)")
        return gettext("%(price)s EUR per %(unit)s") % {"price": lane.cost_eur.normalize(), "unit": lane.cost_unit}

    @admin.display(description=_("parameters"))
    def params_pretty(self, lane):
        return _pretty_json(lane.params)

    @admin.display(description=_("latest health probe"))
    def probe(self, lane):
        health = LaneHealth.objects.filter(lane_id=lane.lane_id).first()
        if health is None:
            return gettext("not probed")
        state = gettext("ok") if health.ok else gettext("FAILED (%(count)s in a row)") % {
            "count": health.consecutive_failures}
        return gettext("%(state)s at %(time)s UTC (%(target)s) %(detail)s") % {
            "state": state, "time": f"{health.checked_at:%Y-%m-%d %H:%M:%S}", "target": health.target,
            "detail": health.detail}


@admin.register(IntegrationLayer)
class IntegrationLayerAdmin(ReadOnlyAdmin):
    list_display = ["name", "description"]
    search_fields = ["name", "description"]


@admin.register(RegistryVersion)
class RegistryVersionAdmin(ReadOnlyAdmin):
    list_display = ["number", "version", "updated", "lane_count", "loaded_at", "loaded_by", "short_sha"]
    search_fields = ["version", "sha256", "loaded_by"]
    # The summary and the field-by-field diff first; the whole document (thousands of
    # pixels) folded away until asked for.
    fieldsets = [
        (None, {"fields": ["number", "version", "updated", "lane_count", "loaded_at", "loaded_by", "sha256"]}),
        (_("Changes against the version before"), {"fields": ["changes"]}),
        (_("Whole document"), {"classes": ["collapse"], "fields": ["document_pretty"]}),
    ]

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        # The list needs no documents (a large registry is megabytes per version).
        return queryset.defer("document_text") if request.resolver_match.url_name.endswith("changelist") else queryset

    @admin.display(description=_("SHA-256"))
    def short_sha(self, version):
        return version.sha256[:12]

    @admin.display(description=_("changes against the version before"))
    def changes(self, version):
        diff = selectors.changes_since_previous(version)
        if diff is None:
            return gettext("first version")
        if diff.empty:
            return gettext("no differences")
        return format_html("<pre>{}</pre>", "\n".join(diff.lines()))

    @admin.display(description=_("document"))
    def document_pretty(self, version):
        return _pretty_json(version.document)


@admin.register(LaneHealth)
class LaneHealthAdmin(ReadOnlyAdmin):
    list_display = ["lane_id", "ok", "consecutive_failures", "checked_at", "target", "detail"]
    list_filter = ["ok"]
    search_fields = ["lane_id", "target"]


@admin.register(LaneCooldown)
class LaneCooldownAdmin(ReadOnlyAdmin):
    list_display = ["lane_id", "until", "failures", "reason", "updated_at"]
    search_fields = ["lane_id", "reason"]


@admin.register(LaneError)
class LaneErrorAdmin(ReadOnlyAdmin):
    list_display = ["lane_id", "outcome", "detail", "failed_at", "failures"]
    list_filter = ["outcome"]
    search_fields = ["lane_id", "detail"]
