from rest_framework import serializers

from console.fields import ClosedSerializer, ListedChoiceField
from knowledge_app.models import KnowledgeDocument, KnowledgePassage
from knowledge_app.readers import MARKDOWN, TEXT

# Names on the wire (camelCase: a new resource) and on the model.


class KnowledgeDocumentSerializer(serializers.ModelSerializer):
    contentType = serializers.CharField(source="content_type")
    sizeBytes = serializers.IntegerField(source="size_bytes")
    passageCount = serializers.IntegerField(source="passage_count")
    createdAt = serializers.DateTimeField(source="created_at")

    class Meta:
        model = KnowledgeDocument
        fields = ["id", "title", "contentType", "sizeBytes", "characters", "passageCount", "status", "createdAt"]
        read_only_fields = fields


class KnowledgePassageSerializer(serializers.ModelSerializer):
    position = serializers.IntegerField(source="ordinal")

    class Meta:
        model = KnowledgePassage
        fields = ["position", "heading", "text"]
        read_only_fields = fields


class KnowledgeDocumentDetailSerializer(KnowledgeDocumentSerializer):
    passages = KnowledgePassageSerializer(many=True, read_only=True)

    class Meta(KnowledgeDocumentSerializer.Meta):
        fields = [*KnowledgeDocumentSerializer.Meta.fields, "passages"]
        read_only_fields = fields


class KnowledgeTextSerializer(ClosedSerializer):
    """A document sent as JSON: its title and text (Markdown by default)."""

    title = serializers.CharField(max_length=200, help_text="1–200 characters.")
    text = serializers.CharField(trim_whitespace=False, help_text="UTF-8 text of at most 2 MB (2,097,152 bytes).")
    contentType = ListedChoiceField(choices=[MARKDOWN, TEXT], required=False, default=MARKDOWN,
                                    help_text="How to read `text`: Markdown (headings make sections) or plain text.")


class KnowledgeFileSerializer(serializers.Serializer):
    """A document uploaded as a file (multipart/form-data); described for the OpenAPI
    document, read by the view."""

    file = serializers.FileField(help_text="A .txt, .md or .pdf file of at most 2 MB.")
    title = serializers.CharField(required=False, max_length=200,
                                  help_text="1–200 characters; default: the file's name without its extension.")


class FoundPassageSerializer(serializers.Serializer):
    document = serializers.CharField(help_text="The document's id (kd_…).")
    title = serializers.CharField(help_text="The document's title.")
    heading = serializers.CharField(help_text="The headings the passage stands under, joined by ' › ', or ''.")
    text = serializers.CharField()
    score = serializers.FloatField(help_text="Relevance, higher is better; comparable within one answer only.")


class KnowledgeSearchQuerySerializer(ClosedSerializer):
    q = serializers.CharField(max_length=500, help_text="The question or words to look for (German).")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=20,
                                     help_text="1–20 passages, default 3.")
    maxChars = serializers.IntegerField(required=False, min_value=100, max_value=20_000,
                                        help_text="100–20,000 characters of text together, default 2,400.")
    document = serializers.CharField(required=False, max_length=40,
                                     help_text="Only this document's passages (a kd_ id).")


class SynonymsSerializer(serializers.Serializer):
    synonyms = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(max_length=60), min_length=2, max_length=20),
        help_text="Groups of words or short phrases that mean the same, e.g. "
                  "[[\"Sprechzeiten\", \"Öffnungszeiten\", \"geöffnet\"]].")


class SynonymsPutSerializer(ClosedSerializer, SynonymsSerializer):
    pass
