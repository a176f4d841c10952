from django.core.validators import RegexValidator, URLValidator
from rest_framework import serializers

from console.fields import (
    ClosedSerializer,
    ListedChoiceField,
    MomentField,
    NullIfEmptyField,
    PageQuerySerializer,
    PhoneQueryField,
)
from console.listing import PAGE_ORDER, Listing
from console.numbers.serializers import E164Field
from leads_app.consent import VERSION_PATTERN
from leads_app.models import Lead
from leads_app.preferred_time import InvalidToken, parse

# One message for "no such tenant" and "malformed slug": a public form must not tell
# a stranger which tenants exist (CONTRACT §6).
UNKNOWN_TENANT = "Not a tenant that accepts leads."


class LeadSerializer(serializers.ModelSerializer):
    """A stored lead as the console API shows it (CONTRACT §6)."""

    tenant = serializers.CharField(source="tenant.slug")
    # Not given is null on the wire, not an empty string.
    preferred_at = NullIfEmptyField()
    page_url = NullIfEmptyField()
    consent_version = NullIfEmptyField()

    class Meta:
        model = Lead
        fields = ["id", "tenant", "kind", "phone", "preferred_at", "preferred_at_resolved", "page_url",
                  "status", "created_at", "consent_version"]
        read_only_fields = fields


class PublicLeadCreatedSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.CharField()


class StrictCharField(serializers.CharField):
    """A string, never a number or boolean coerced into one."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        return super().to_internal_value(data)


class TenantSlugField(StrictCharField):
    """The tenant named in the body; the view looks it up once (it needs it for the
    origin check and the rate limit before validation) and passes it in the context."""

    def to_internal_value(self, data):
        slug = super().to_internal_value(data)
        tenant = self.context.get("tenant")
        if tenant is None or tenant.slug != slug:
            raise serializers.ValidationError(UNKNOWN_TENANT)
        return tenant


class PreferredTimeField(StrictCharField):
    def to_internal_value(self, data):
        try:
            return parse(super().to_internal_value(data))
        except InvalidToken as exc:
            raise serializers.ValidationError(str(exc)) from None


class PublicLeadSerializer(serializers.Serializer):
    """The body of `POST /v2/public/leads`; fields not listed here are ignored."""

    tenant = TenantSlugField()
    kind = serializers.ChoiceField(choices=Lead.Kind.choices)
    phone = E164Field(max_length=40)
    preferred_at = PreferredTimeField(required=False, allow_null=True, default=None)
    page_url = StrictCharField(max_length=2000, required=False, allow_null=True, allow_blank=True, default=None,
                               validators=[URLValidator(schemes=["http", "https"],
                                                        message="Send the page address as an http(s) URL.")])
    consent_version = StrictCharField(
        max_length=40, required=False, allow_null=True, default=None,
        validators=[RegexValidator(VERSION_PATTERN, "A version is 1–40 letters, digits, '.', '_' or '-'.")],
    )
    # The honeypot: invisible in the widget, so only a bot fills it in.
    website = serializers.JSONField(required=False, default=None, write_only=True)

    def validate_page_url(self, value):
        return value or ""

    def validate_consent_version(self, value):
        return value or ""


class LeadUpdateSerializer(ClosedSerializer):
    status = ListedChoiceField(choices=Lead.Status.choices)


class LeadListQuerySerializer(PageQuerySerializer):
    """`GET /v2/leads`: a page (`limit` as for calls: default 50, over 200 is 200; `cursor`)
    and the filters, all combinable (AND)."""

    status = ListedChoiceField(choices=Lead.Status.choices, required=False)
    kind = ListedChoiceField(choices=Lead.Kind.choices, required=False)
    phone = PhoneQueryField(required=False, max_length=40,
                            help_text="Leads of this number, in any format (`030 901820`, `+49 30 901820`).")
    since = MomentField(required=False, help_text="Leads created at or after this ISO 8601 time.")
    until = MomentField(required=False, help_text="Leads created before this ISO 8601 time.")


# `GET /v2/leads` (console/listing.py).
LEADS = Listing("leads", LeadSerializer, query=LeadListQuerySerializer, ordering=PAGE_ORDER, filters={
    "status": "status", "kind": "kind", "phone": "phone", "since": "created_at__gte", "until": "created_at__lt"})
