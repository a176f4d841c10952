from django.urls import path, re_path

from registry_app import views

urlpatterns = [
    path("registry", views.RegistryDocumentView.as_view(), name="registry"),
    path("registry/schema", views.RegistrySchemaView.as_view(), name="registry-schema"),
    path("registry/models", views.LaneListView.as_view(), name="registry-models"),
    path("registry/models/<str:lane_id>", views.LaneDetailView.as_view(), name="registry-model"),
    path("registry/versions", views.VersionListView.as_view(), name="registry-versions"),
    re_path(r"^registry/versions/(?P<number>[0-9]{1,18})$", views.VersionDetailView.as_view(),
            name="registry-version"),
    path("registry/route", views.RouteView.as_view(), name="registry-route"),
]
