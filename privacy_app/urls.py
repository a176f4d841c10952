from django.urls import path

from privacy_app.views import (
    ErasureDetailView,
    ErasureListView,
    ExportDetailView,
    ExportListView,
    RetentionSettingsView,
)

urlpatterns = [
    path("privacy/settings", RetentionSettingsView.as_view(), name="privacy-settings"),
    path("privacy/exports", ExportListView.as_view(), name="privacy-exports"),
    path("privacy/exports/<str:export_id>", ExportDetailView.as_view(), name="privacy-export"),
    path("privacy/erasures", ErasureListView.as_view(), name="privacy-erasures"),
    path("privacy/erasures/<str:erasure_id>", ErasureDetailView.as_view(), name="privacy-erasure"),
]
