"""SMS in the admin: the tenant's provider (saved through the service, the token
sealed and never shown) and the SMS it sent or will send (read only)."""
from typing import Any, cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from calls_app.kinds.twilio import NAME as TWILIO
from calls_app.models import Carrier
from console.errors import ApiError
from console.tenants.admin_scoping import ReadOnlyAdminMixin, TenantScopedAdmin
from messaging_app import selectors, services
from messaging_app.models import MessagingSettings, Sms
from messaging_app.serializers import SETTINGS_FIELDS

FORM_FIELD_OF = {wire: name for wire, name in SETTINGS_FIELDS.items()}


class MessagingSettingsForm(forms.ModelForm):
    sipgate_token = forms.CharField(label=_("sipgate token"), required=False, widget=forms.PasswordInput,
                                    help_text=_("Stored sealed and never shown again; empty: the stored one stays."))

    class Meta:
        model = MessagingSettings
        fields = ["tenant", "provider", "sipgate_token_id", "sipgate_sms_id", "twilio_carrier", "sender_e164",
                  "webhook_url", "templates"]
        help_texts = {
            "provider": _("Default: each call's own carrier sends its SMS, from the number called, where it can "
                          "(a Twilio carrier); calls through other carriers get none. None: no SMS at all."),
            "sipgate_token_id": _("The id of the sipgate personal access token (token-…), scope sessions:sms:write."),
            "sipgate_sms_id": _("The SMS extension of the sipgate account (s0, s1 …)."),
            "twilio_carrier": _("The Twilio carrier whose account sends the SMS."),
            "sender_e164": _("The sender: one of the tenant's numbers (E.164), with Twilio."),
            "webhook_url": _("Your own HTTPS endpoint: it receives each SMS signed like our webhooks."),
            "templates": _("Your own texts, e.g. {\"confirmation\": \"…{date}…{time}…\"}; empty: the defaults."),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "twilio_carrier" in self.fields:
            cast(forms.ModelChoiceField, self.fields["twilio_carrier"]).queryset = Carrier.objects.filter(kind=TWILIO)

    def clean(self) -> dict[str, Any]:
        """The service's checks (messaging_settings_apply), their problems at the fields."""
        cleaned = super().clean() or {}
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        if tenant is None or self.errors:
            return cleaned
        carrier = cleaned.get("twilio_carrier")
        self.api_data = {**{name: cleaned.get(name) or "" for name in (
            "provider", "sipgate_token_id", "sipgate_sms_id", "sender_e164", "webhook_url", "sipgate_token")},
            "twilio_carrier": carrier.pk if carrier is not None else None, "templates": cleaned.get("templates") or {}}
        self.tenant = tenant
        try:
            services.messaging_settings_apply(tenant=tenant, config=selectors.messaging_settings_for(tenant=tenant),
                                              data=self.api_data)
        except ApiError as exc:
            for path, reasons in (exc.details or {"provider": [exc.message]}).items():
                wire = path.split(".")[0]
                field = "webhook_url" if wire == "url" else FORM_FIELD_OF.get(wire, wire)
                self.add_error(field if field in self.fields else None, ValidationError([str(r) for r in reasons]))
        return cleaned


@admin.register(MessagingSettings)
class MessagingSettingsAdmin(TenantScopedAdmin):
    form = MessagingSettingsForm
    list_display = ["tenant", "provider", "updated_at"]
    search_fields = ["tenant__slug", "tenant__name"]
    list_select_related = ["tenant"]
    readonly_fields = ["updated_at"]

    def save_model(self, request: HttpRequest, obj: MessagingSettings, form: Any, change: bool) -> None:
        """Through the service (the token sealed, the URL admitted, a webhook's secret
        made and shown once)."""
        config, secret = services.messaging_settings_update(tenant=form.tenant, data=form.api_data)
        obj.pk = config.pk
        if secret:
            self.message_user(request, gettext("The webhook's signing secret (shown only now): %(secret)s")
                              % {"secret": secret}, messages.WARNING)

    def get_readonly_fields(self, request: HttpRequest, obj: MessagingSettings | None = None) -> list[str]:
        return [*self.readonly_fields, "tenant"] if obj is not None else list(self.readonly_fields)


@admin.register(Sms)
class SmsAdmin(ReadOnlyAdminMixin, TenantScopedAdmin):
    list_display = ["created_at", "to_e164", "template", "status", "provider", "send_at", "sent_at"]
    list_filter = ["status", "template"]
    search_fields = ["id", "to_e164", "call_id", "provider_id"]
    list_select_related = ["tenant"]
    exclude = ["key"]
