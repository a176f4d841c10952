"""Usage of the gateway's lanes in the admin: read-only (the gateway writes it)."""
from django.contrib import admin

from console.tenants.admin_scoping import ReadOnlyAdminMixin
from gateway_app.models import LaneUsage


@admin.register(LaneUsage)
class LaneUsageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["day", "lane_id", "capability", "mode", "requests", "failures", "input_tokens", "output_tokens",
                    "characters", "audio_seconds", "eur"]
    list_filter = ["capability", "mode", "day"]
    search_fields = ["lane_id"]
    date_hierarchy = "day"
