from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import mixins, status
from rest_framework.response import Response

from console.api import OpenAPIView, TenantViewSet, validated
from console.errors import PayloadTooLarge, ValidationFailed
from console.idempotency.services import idempotent
from console.ids import PrefixedId
from console.listing import ListedMixin
from console.openapi import errors
from leads_app import access, ratelimit, selectors, services
from leads_app.errors import LeadRateLimited, OriginForbidden
from leads_app.models import Lead
from leads_app.serializers import (
    LEADS,
    LeadSerializer,
    LeadUpdateSerializer,
    PublicLeadCreatedSerializer,
    PublicLeadSerializer,
)

# A lead is a handful of short fields; anything bigger is not a form post.
MAX_BODY_BYTES = 8 * 1024
RATE_WINDOW_SECONDS = 600  # CONTRACT §6: posts per client address and tenant per 10 minutes


class PublicLeadView(OpenAPIView):
    """`POST /v2/public/leads`: open, the tenant in the body (CONTRACT §6)."""

    @extend_schema(
        summary="Post a lead from a public page",
        examples=[OpenApiExample("A callback request", request_only=True, value={
            "tenant": "acme", "kind": "callback", "phone": "0171 2345678", "preferred_at": "tomorrow-am",
            "page_url": "https://acme.example/kontakt", "consent_version": "callback-de-1"})],
        extensions=errors(403, 409, 429),
        request=PublicLeadSerializer,
        responses={201: PublicLeadCreatedSerializer},
        parameters=[OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=False)],
    )
    def post(self, request):
        _check_body_size(request)
        body = request.data
        if not isinstance(body, dict):
            raise ValidationFailed(details={"non_field_errors": ["The body must be a JSON object."]})
        tenant = selectors.public_tenant(body.get("tenant"))
        # Checked for unknown tenants too (they allow no origin), so that a foreign
        # page gets the same 403 whether or not the tenant it names exists.
        _check_origin(request, tenant)
        if tenant is not None:
            _count_post(request, tenant)
        serializer = PublicLeadSerializer(data=body, context={"tenant": tenant})
        serializer.is_valid(raise_exception=True)
        fields = serializer.validated_data
        if fields["website"]:
            # The honeypot was filled in: answer like a stored lead, store nothing.
            return Response({"id": PrefixedId("ld")(), "status": Lead.Status.NEW}, status=status.HTTP_201_CREATED)
        return idempotent(request, scope=f"public.leads:{tenant.pk}", handler=lambda: _create(fields))

    @extend_schema(exclude=True)
    def options(self, request, *args, **kwargs):
        """The CORS preflight: bodiless, so it allows an origin that any tenant allows."""
        origin = access.request_origin(request)
        if origin == "":
            return Response(status=status.HTTP_204_NO_CONTENT, headers={"Allow": "POST, OPTIONS"})
        if not access.origin_allowed_by_any_tenant(request, origin):
            raise OriginForbidden.of(origin, any_tenant=True)
        return Response(status=status.HTTP_204_NO_CONTENT, headers=access.preflight_headers(origin))

    def finalize_response(self, request, response, *args, **kwargs):
        # Errors carry the CORS headers too, so the widget can show the server's message.
        origin = access.request_origin(request)
        if request.method != "OPTIONS" and access.origin_allowed_by_any_tenant(request, origin):
            for name, value in access.cors_headers(origin).items():
                response[name] = value
        return super().finalize_response(request, response, *args, **kwargs)


def _check_body_size(request):
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > MAX_BODY_BYTES or len(request.body) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"A lead is at most {MAX_BODY_BYTES} bytes of JSON.")


def _check_origin(request, tenant):
    origin = access.request_origin(request)
    if origin == "":
        return  # a server posting, not a browser
    if origin is None or not access.origin_allowed_for(request, origin, tenant):
        raise OriginForbidden.of(origin)


def _count_post(request, tenant):
    bucket = f"public-leads:{tenant.pk}:{access.client_address(request)}"
    retry_after = ratelimit.hit(bucket, limit=tenant.lead_rate_limit, window=RATE_WINDOW_SECONDS)
    if retry_after is not None:
        raise LeadRateLimited(retry_after)


def _create(fields):
    lead = services.lead_receive(
        tenant=fields["tenant"],
        kind=fields["kind"],
        phone=fields["phone"],
        preferred_time=fields["preferred_at"],
        page_url=fields["page_url"],
        consent_version=fields["consent_version"],
    )
    return Response({"id": lead.id, "status": lead.status}, status=status.HTTP_201_CREATED)


class LeadViewSet(ListedMixin, mixins.RetrieveModelMixin, TenantViewSet):
    """The tenant's leads in the console: list, one, and status changes."""

    listing = LEADS
    lookup_value_regex = "[^/]+"

    @extend_schema(request=LeadUpdateSerializer, responses=LeadSerializer)
    def partial_update(self, request, pk=None):
        lead = self.get_object()
        data = validated(LeadUpdateSerializer, request.data)
        lead = services.lead_set_status(lead=lead, status=data["status"])
        return Response(LeadSerializer(lead).data)

