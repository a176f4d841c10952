from django.urls import path

from messaging_app.views import MessagingSettingsView, SmsListView

urlpatterns = [
    path("messaging", MessagingSettingsView.as_view(), name="messaging-settings"),
    path("messaging/sms", SmsListView.as_view(), name="messaging-sms"),
]
