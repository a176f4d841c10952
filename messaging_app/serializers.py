from rest_framework import serializers

from console.fields import ClosedSerializer, LimitField
from messaging_app.models import MessagingSettings, Sms
from messaging_app.texts import DEFAULT_TEMPLATES

# The wire's names of the settings' fields (the model's on the right).
SETTINGS_FIELDS = {"provider": "provider", "sipgateTokenId": "sipgate_token_id", "sipgateToken": "sipgate_token",
                   "sipgateSmsId": "sipgate_sms_id", "twilioCarrier": "twilio_carrier", "senderE164": "sender_e164",
                   "webhookUrl": "webhook_url", "templates": "templates", "rotateSecret": "rotate_secret"}


PROVIDER_HELP = ("`carrier` (the default): each call's own carrier, where its kind sends SMS (a Twilio carrier; "
                 "another call's SMS → 409 `sms_carrier_cannot_send`); `sipgate`, `twilio`, `webhook`: that "
                 "provider, with its fields; `\"\"`: no SMS.")


class MessagingSettingsSerializer(serializers.Serializer):
    provider = serializers.ChoiceField(choices=MessagingSettings.Provider.choices, allow_blank=True,
                                       help_text=PROVIDER_HELP)
    sipgateTokenId = serializers.CharField(allow_blank=True)
    sipgateTokenSet = serializers.BooleanField(help_text="Whether a sipgate token is stored (it is never shown).")
    sipgateSmsId = serializers.CharField(allow_blank=True)
    twilioCarrier = serializers.CharField(allow_null=True)
    senderE164 = serializers.CharField(allow_blank=True)
    webhookUrl = serializers.CharField(allow_blank=True)
    webhookSecret = serializers.CharField(required=False, help_text="Only in the answer that made a new secret.")
    templates = serializers.DictField(child=serializers.CharField(), help_text="The tenant's own templates.")
    defaultTemplates = serializers.DictField(child=serializers.CharField())
    updatedAt = serializers.DateTimeField(allow_null=True)


class MessagingSettingsPatchSerializer(ClosedSerializer):
    require_one = True
    provider = serializers.ChoiceField(choices=MessagingSettings.Provider.choices, allow_blank=True, required=False,
                                       help_text=PROVIDER_HELP)
    sipgateTokenId = serializers.CharField(max_length=100, allow_blank=True, required=False)
    sipgateToken = serializers.CharField(max_length=200, required=False, write_only=True)
    sipgateSmsId = serializers.RegexField(r"^[a-z][a-z0-9]{0,19}$", allow_blank=True, required=False)
    twilioCarrier = serializers.CharField(max_length=64, allow_null=True, allow_blank=True, required=False)
    senderE164 = serializers.RegexField(r"^\+[1-9][0-9]{6,14}$", allow_blank=True, required=False)
    webhookUrl = serializers.CharField(max_length=2000, allow_blank=True, required=False)
    templates = serializers.JSONField(required=False)
    rotateSecret = serializers.BooleanField(required=False)


class SmsSerializer(serializers.Serializer):
    """One SMS, as messaging_app.selectors.sms_json writes it."""

    id = serializers.CharField()
    to = serializers.CharField(help_text="E.164: the caller's own number")
    template = serializers.CharField()
    text = serializers.CharField()
    callId = serializers.CharField(allow_null=True)
    provider = serializers.CharField(allow_null=True)
    providerId = serializers.CharField(allow_null=True)
    status = serializers.ChoiceField(choices=Sms.Status.choices)
    error = serializers.CharField(allow_null=True)
    attempts = serializers.IntegerField()
    sendAt = serializers.DateTimeField()
    sentAt = serializers.DateTimeField(allow_null=True)
    createdAt = serializers.DateTimeField()


class SmsListQuerySerializer(ClosedSerializer):
    limit = LimitField()


def messaging_settings_json(config: MessagingSettings, *, secret: str | None = None) -> dict:
    body = {"provider": config.provider, "sipgateTokenId": config.sipgate_token_id,
            "sipgateTokenSet": bool(config.sipgate_token_sealed), "sipgateSmsId": config.sipgate_sms_id,
            "twilioCarrier": config.twilio_carrier_id, "senderE164": config.sender_e164,
            "webhookUrl": config.webhook_url, "templates": config.templates, "defaultTemplates": DEFAULT_TEMPLATES,
            "updatedAt": config.updated_at}
    if secret:
        body["webhookSecret"] = secret
    return body

