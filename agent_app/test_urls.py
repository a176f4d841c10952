"""Under /admin/, ahead of the admin's own routes (console/urls.py): "Im Browser testen"."""
from django.contrib import admin
from django.urls import path

from agent_app import test_views

urlpatterns = [
    path("assistants/assistant/<str:assistant_id>/test/", admin.site.admin_view(test_views.browser_test_page),
         name="assistant-browser-test"),
    path("assistants/assistant/<str:assistant_id>/test/session", admin.site.admin_view(test_views.browser_test_session),
         name="assistant-browser-test-session"),
]
