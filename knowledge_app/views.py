"""`/v2/knowledge`: the tenant's documents (upload, list, get, delete), a search to try
retrieval with, and the synonym groups."""
from pathlib import Path

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.response import Response

from console.api import TenantAPIView, TenantViewSet, accepts_query, validated
from console.errors import ValidationFailed
from console.openapi import errors
from knowledge_app import readers, selectors, services
from knowledge_app.models import KnowledgeDocument
from knowledge_app.parsers import KnowledgeJSONParser, KnowledgeMultipartParser
from knowledge_app.serializers import (
    FoundPassageSerializer,
    KnowledgeDocumentDetailSerializer,
    KnowledgeDocumentSerializer,
    KnowledgeFileSerializer,
    KnowledgeSearchQuerySerializer,
    KnowledgeTextSerializer,
    SynonymsPutSerializer,
    SynonymsSerializer,
)

FORM_FIELDS = ("file", "title")


class UsageSerializer(serializers.Serializer):
    documents = serializers.IntegerField()
    bytes = serializers.IntegerField(help_text="Bytes uploaded, counted against maxBytes.")
    maxDocuments = serializers.IntegerField()
    maxBytes = serializers.IntegerField()

    class Meta:
        ref_name = "KnowledgeUsage"  # calls_app's Usage is the minutes


class KnowledgeViewSet(mixins.RetrieveModelMixin, TenantViewSet):
    """The tenant's knowledge documents."""

    model = KnowledgeDocument
    serializer_class = KnowledgeDocumentDetailSerializer
    parser_classes = [KnowledgeJSONParser, KnowledgeMultipartParser]
    lookup_value_regex = "[^/]+"

    @extend_schema(summary="List the knowledge documents with the tenant's usage",
                   responses=inline_serializer("KnowledgeDocumentList", {
                       "documents": KnowledgeDocumentSerializer(many=True), "usage": UsageSerializer()}))
    def list(self, request):
        documents = selectors.document_list(tenant=request.tenant)
        return Response({"documents": KnowledgeDocumentSerializer(documents, many=True).data,
                         "usage": selectors.knowledge_usage(tenant=request.tenant)})

    @extend_schema(
        summary="Add a document (text, Markdown or PDF): split into passages and indexed",
        request={"application/json": KnowledgeTextSerializer, "multipart/form-data": KnowledgeFileSerializer},
        responses={201: KnowledgeDocumentDetailSerializer}, extensions=errors(409, 415, 422),
        examples=[OpenApiExample("Markdown sent as JSON", request_only=True, media_type="application/json", value={
            "title": "Häufige Fragen", "text": "## Öffnungszeiten\n\nMontag bis Freitag von 8 bis 18 Uhr.",
            "contentType": "text/markdown"})],
    )
    def create(self, request):
        if request.content_type.startswith("multipart/form-data"):
            document = self._create_from_upload(request)
        else:
            data = validated(KnowledgeTextSerializer, request.data)
            document = services.knowledge_document_create(
                tenant=request.tenant, title=data["title"], content_type=data["contentType"], text=data["text"])
        return Response(KnowledgeDocumentDetailSerializer(document).data, status=status.HTTP_201_CREATED)

    def _create_from_upload(self, request):
        unknown = sorted(set(request.data) - set(FORM_FIELDS))
        problems = {name: [f"Unknown field. Accepted: {', '.join(FORM_FIELDS)}."] for name in unknown}
        upload = request.FILES.get("file")
        if upload is None:
            problems["file"] = ["Send the document as the form's file field `file` (.txt, .md or .pdf)."]
        if problems:
            raise ValidationFailed(details=problems)
        content_type = readers.content_type_of(upload.content_type, upload.name)
        readers.check_size(upload.size)
        title = request.data.get("title") or Path(upload.name or "").stem or upload.name
        return services.knowledge_document_create(tenant=request.tenant, title=title, content_type=content_type,
                                                  data=upload.read())

    @extend_schema(summary="Get a knowledge document with its passages")
    def retrieve(self, request, pk=None):
        return Response(KnowledgeDocumentDetailSerializer(self.get_object()).data)

    @extend_schema(summary="Delete a knowledge document and its passages", responses={204: None})
    def destroy(self, request, pk=None):
        services.knowledge_document_delete(document=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)


class KnowledgeSearchView(TenantAPIView):
    @accepts_query(
        OpenApiParameter("q", str, required=True, description="The question or words to look for (German)."),
        OpenApiParameter("limit", OpenApiTypes.INT, description="1–20 passages, default 3."),
        OpenApiParameter("maxChars", OpenApiTypes.INT,
                         description="100–20,000 characters of text together, default 2,400."),
        OpenApiParameter("document", str, description="Only this document's passages (a kd_ id)."),
    )
    @extend_schema(summary="Search the knowledge as an assistant's turn does",
                   responses=inline_serializer("KnowledgeSearchResult",
                                               {"passages": FoundPassageSerializer(many=True)}))
    def get(self, request):
        query = validated(KnowledgeSearchQuerySerializer, request.query_params.dict())
        document = query.get("document")
        passages = selectors.knowledge_search(
            tenant=request.tenant, query=query["q"], document_ids=[document] if document else None,
            limit=query.get("limit"), max_chars=query.get("maxChars"))
        return Response({"passages": [passage.as_json() for passage in passages]})


class KnowledgeSynonymsView(TenantAPIView):
    @extend_schema(summary="The tenant's synonym groups", responses=SynonymsSerializer)
    def get(self, request):
        return Response({"synonyms": selectors.synonym_groups(tenant=request.tenant)})

    @extend_schema(summary="Replace the tenant's synonym groups", request=SynonymsPutSerializer,
                   responses=SynonymsSerializer,
                   examples=[OpenApiExample("Opening hours", request_only=True, value={
                       "synonyms": [["Sprechzeiten", "Öffnungszeiten", "geöffnet"]]})])
    def put(self, request):
        data = validated(SynonymsPutSerializer, request.data)
        groups = services.knowledge_synonyms_replace(tenant=request.tenant, groups=data["synonyms"])
        return Response({"synonyms": groups})
