from django.urls import path

from leads_app import widget_views

urlpatterns = [
    path("callback.js", widget_views.callback_js, name="widget-callback"),
    path("demo", widget_views.demo_page, name="widget-demo"),
]
