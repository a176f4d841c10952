from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response

from campaigns_app import selectors, services
from campaigns_app.contact_rows import MAX_CSV_ROWS, csv_contacts, from_json
from campaigns_app.models import BlockedNumber, Campaign
from campaigns_app.parsers import (
    MAX_UPLOAD_BYTES,
    ContactsJSONParser,
    CsvBodyParser,
    UploadMultiPartParser,
    upload_too_large,
)
from campaigns_app.serializers import (
    BlockedNumberCreateSerializer,
    BlockedNumberSerializer,
    BlocklistQuerySerializer,
    CampaignCreateSerializer,
    CampaignSerializer,
    CampaignUpdateSerializer,
    ContactListQuerySerializer,
    ContactSerializer,
    ContactsFileSerializer,
    ContactsReportSerializer,
    ContactsUploadSerializer,
)
from console.api import TenantViewSet, accepts_query, validated, validated_query
from console.csv_export import csv_stream
from console.errors import ValidationFailed
from console.fields import PageQuerySerializer
from console.openapi import errors
from console.pagination import NEXT_HELP, after_cursor, page_of
from console.phone import InvalidPhoneNumber, to_e164

CAMPAIGN_EXAMPLE = OpenApiExample("A reminder campaign", request_only=True, value={
    "name": "Terminerinnerung November", "assistant": "as_01jd0000000000000000000000",
    "fromNumber": "+493055501234", "purpose": "service",
    "window": {"mon": {"start": "09:00", "end": "18:00"}, "sat": {"start": "10:00", "end": "14:00"}},
    "concurrency": 2, "maxAttempts": 3, "retryAfterMin": 120, "voicemail": "leave_message",
})
CONTACTS_EXAMPLE = OpenApiExample("Two contacts", request_only=True, value={"contacts": [
    {"phone": "0176 11122233", "name": "Jürgen Müller", "variables": {"firstName": "Jürgen"},
     "consentSource": "Webformular", "consentAt": "2026-10-01T10:00:00+02:00",
     "consentText": "Ja, rufen Sie mich zu Angeboten an."},
    {"phone": "+49 30 901820", "name": "Praxis Weiß", "b2b": True},
]})


def _serialized(campaign):
    return CampaignSerializer(campaign).data


class CsvOrJsonNegotiation(DefaultContentNegotiation):
    """The results export answers CSV whatever `Accept` says; its errors are JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type


class CampaignViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    """`/v2/campaigns`: outbound campaigns, their state, contacts and results."""

    model = Campaign
    serializer_class = CampaignSerializer
    lookup_value_regex = "[^/]+"

    @accepts_query(PageQuerySerializer)
    @extend_schema(responses=inline_serializer("CampaignList", {
        "campaigns": CampaignSerializer(many=True),
        "next": serializers.CharField(allow_null=True, help_text=NEXT_HELP),
    }))
    def list(self, request):
        query = validated_query(PageQuerySerializer, request)
        rows = after_cursor(self.get_queryset(), tenant=request.tenant, scope="campaigns", cursor=query.get("cursor"))
        campaigns, next_cursor = page_of(list(rows[:query["limit"] + 1]), tenant=request.tenant, scope="campaigns",
                                         limit=query["limit"], position=lambda row: (row.created_at, row.pk))
        for campaign in campaigns:
            campaign.tenant = request.tenant
        counts = selectors.counts_for([c.pk for c in campaigns])
        return Response({"campaigns": CampaignSerializer(campaigns, many=True, context={"counts": counts}).data,
                         "next": next_cursor})

    @extend_schema(request=CampaignCreateSerializer, responses={201: CampaignSerializer},
                   summary="Create a campaign (a draft)", examples=[CAMPAIGN_EXAMPLE])
    def create(self, request):
        data = validated(CampaignCreateSerializer, request.data)
        campaign = services.campaign_create(tenant=request.tenant, **CampaignCreateSerializer.service_kwargs(data))
        return Response(_serialized(campaign), status=status.HTTP_201_CREATED)

    @extend_schema(request=CampaignUpdateSerializer, responses=CampaignSerializer, extensions=errors(409),
                   summary="Change a campaign (its purpose only as a draft)")
    def partial_update(self, request, pk=None):
        campaign = self.get_object()
        data = validated(CampaignUpdateSerializer, request.data)
        campaign = services.campaign_update(campaign=campaign, **CampaignUpdateSerializer.service_kwargs(data))
        return Response(_serialized(campaign))

    @extend_schema(responses={204: None}, extensions=errors(409), summary="Delete a draft campaign")
    def destroy(self, request, pk=None):
        services.campaign_delete(campaign=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _transition(self, request, change):
        body = request.data  # read, so that a hostile body is refused like any other
        if body:
            raise ValidationFailed("This change takes no body: send none, or {}.",
                                   details={str(name)[:100]: ["Unknown field. This change takes no body."]
                                            for name in (body if isinstance(body, dict) else ["body"])})
        campaign = services.campaign_transition(campaign=self.get_object(), change=change)
        return Response(_serialized(campaign))

    @extend_schema(request=None, responses=CampaignSerializer, extensions=errors(409),
                   summary="Start a draft campaign (it calls within its window)")
    @action(detail=True, methods=["post"])
    def start(self, request, pk=None):
        return self._transition(request, "start")

    @extend_schema(request=None, responses=CampaignSerializer, extensions=errors(409),
                   summary="Pause a running campaign (calls under way end as they end)")
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        return self._transition(request, "pause")

    @extend_schema(request=None, responses=CampaignSerializer, extensions=errors(409),
                   summary="Resume a paused campaign")
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        return self._transition(request, "resume")

    @extend_schema(request=None, responses=CampaignSerializer, extensions=errors(409),
                   summary="Cancel a campaign for good")
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        return self._transition(request, "cancel")

    @accepts_query(ContactListQuerySerializer)
    @extend_schema(methods=["GET"], summary="List a campaign's contacts with their attempts",
                   responses=inline_serializer("CampaignContactList", {
                       "contacts": ContactSerializer(many=True),
                       "next": serializers.CharField(allow_null=True, help_text=NEXT_HELP),
                   }))
    @extend_schema(methods=["POST"], summary="Add contacts (JSON rows or a CSV upload)",
                   request={"application/json": ContactsUploadSerializer,
                            "multipart/form-data": ContactsFileSerializer,
                            "text/csv": OpenApiTypes.BINARY},
                   responses=ContactsReportSerializer, extensions=errors(409), examples=[CONTACTS_EXAMPLE])
    @action(detail=True, methods=["get", "post"],
            parser_classes=[ContactsJSONParser, UploadMultiPartParser, CsvBodyParser])
    def contacts(self, request, pk=None):
        campaign = self.get_object()
        if request.method == "GET":
            query = validated_query(ContactListQuerySerializer, request)
            contacts, next_cursor = selectors.contact_page(campaign=campaign, **query)
            return Response({"contacts": ContactSerializer(contacts, many=True).data, "next": next_cursor})
        now = timezone.now()
        rows, row_errors, file_info = _upload_rows(request, campaign, now)
        report = services.contacts_add(campaign=campaign, rows=rows, errors=row_errors, now=now)
        if file_info:
            report["file"] = file_info
        report["counts"] = selectors.counts_of(campaign)
        return Response(report)

    @extend_schema(summary="Download a campaign's results as CSV (formulas neutralised)",
                   responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description=(
                       "One line per contact: phone, name, status, outcome, attempts, call ids, consent."))})
    @action(detail=True, methods=["get"], url_path="results.csv", url_name="results",
            content_negotiation_class=CsvOrJsonNegotiation)
    def results(self, request, pk=None):
        campaign = self.get_object()
        response = StreamingHttpResponse(csv_stream(selectors.EXPORT_HEADER, selectors.export_rows(campaign)),
                                         content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="kampagne-{campaign.pk}.csv"'
        return response


def _upload_rows(request, campaign, now):
    """(rows, errors, file info) of the request's upload, whatever its form."""
    tz = campaign.tenant.time_zone
    content_type = (request.content_type or "").split(";")[0].strip().lower()
    if content_type in ("multipart/form-data", "text/csv"):
        if content_type == "text/csv":
            data = request.data["csv"]
        else:
            upload = request.FILES.get("file")
            if upload is None:
                raise ValidationFailed.field("file", "Send the CSV file as the multipart field 'file'.")
            if upload.size is not None and upload.size > MAX_UPLOAD_BYTES:
                raise upload_too_large(MAX_UPLOAD_BYTES, upload.size)
            data = upload.read(MAX_UPLOAD_BYTES + 1)
        return csv_contacts(data, time_zone=tz, now=now)
    body = request.data
    if isinstance(body, dict):
        unknown = sorted(set(body) - {"contacts"})
        if unknown:
            raise ValidationFailed(details={name: ["Unknown field. Accepted: contacts."] for name in unknown})
        if "contacts" not in body:
            raise ValidationFailed.field("contacts", "Send the contacts as a list, or a CSV file as 'file'.")
        body = body["contacts"]
    if not isinstance(body, list):
        raise ValidationFailed.field("contacts", "Must be a list of contacts.")
    if len(body) > MAX_CSV_ROWS:
        raise ValidationFailed.field("contacts", f"At most {MAX_CSV_ROWS:,} rows in one upload.")
    rows, errors = from_json(body, time_zone=tz, now=now)
    return rows, errors, None


class BlocklistViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    """`/v2/blocklist`: numbers no campaign of the tenant calls."""

    model = BlockedNumber
    serializer_class = BlockedNumberSerializer
    lookup_value_regex = "[^/]+"

    @accepts_query(BlocklistQuerySerializer)
    @extend_schema(responses=inline_serializer("Blocklist", {
        "blocklist": BlockedNumberSerializer(many=True),
        "next": serializers.CharField(allow_null=True, help_text=NEXT_HELP),
    }))
    def list(self, request):
        query = validated_query(BlocklistQuerySerializer, request)
        entries = self.get_queryset()
        if query.get("phone"):
            # Its entry, also one whose number was erased (it blocks by the pseudonym).
            entries = entries.filter(phone__in=selectors.blocklist_keys(tenant=request.tenant, e164=query["phone"]))
        entries = after_cursor(entries, tenant=request.tenant, scope="blocklist", cursor=query.get("cursor"))
        rows, next_cursor = page_of(list(entries[:query["limit"] + 1]), tenant=request.tenant, scope="blocklist",
                                    limit=query["limit"], position=lambda entry: (entry.created_at, entry.pk))
        return Response({"blocklist": BlockedNumberSerializer(rows, many=True).data, "next": next_cursor})

    @extend_schema(request=BlockedNumberCreateSerializer,
                   responses={201: BlockedNumberSerializer, 200: BlockedNumberSerializer},
                   summary="Put a number on the blocklist (200 if it is on it already)")
    def create(self, request):
        data = validated(BlockedNumberCreateSerializer, request.data)
        try:
            if data["reason"] == BlockedNumber.Reason.OPT_OUT:
                existed = selectors.blocklist_entries_for(tenant=request.tenant, e164=to_e164(data["phone"])).exists()
                entry = services.opt_out(tenant=request.tenant, phone=data["phone"], note=data["note"])
                created = not existed
            else:
                entry, created = services.blocklist_add(tenant=request.tenant, phone=data["phone"], note=data["note"])
        except InvalidPhoneNumber as exc:
            raise ValidationFailed.field("phone", str(exc)) from None
        return Response(BlockedNumberSerializer(entry).data,
                        status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @extend_schema(responses={204: None}, extensions=errors(409),
                   summary="Take a number off the blocklist (not an opt-out)")
    def destroy(self, request, pk=None):
        services.blocklist_remove(entry=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)
