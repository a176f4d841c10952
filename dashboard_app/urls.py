"""Under /admin/, ahead of the admin's own routes (console/urls.py)."""
from django.contrib import admin
from django.urls import path

from dashboard_app import views

urlpatterns = [
    path("", admin.site.admin_view(views.dashboard), name="dashboard"),
    path("practice-settings/", admin.site.admin_view(views.tenant_settings), name="tenant-settings"),
]
