from django.utils import timezone
from rest_framework import serializers

from console.assistants.models import Assistant
from console.representation import datetime_text


class AssistantSerializer(serializers.ModelSerializer):
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Assistant
        fields = ["id", "name", "description", "language", "voice", "createdAt", "updatedAt"]
        read_only_fields = fields


def assistant_list_data(rows):
    """`AssistantSerializer(assistants, many=True).data` for the rows of
    `selectors.assistant_rows`, built directly (DRF's CharField is str(), its
    DateTimeField is `datetime_text`); tests/assistants/test_assistant_list_data.py
    checks both agree byte for byte."""
    zone = timezone.get_current_timezone()
    return [{
        "id": str(id_), "name": str(name), "description": str(description), "language": str(language),
        "voice": str(voice), "createdAt": datetime_text(created_at, zone), "updatedAt": datetime_text(updated_at, zone),
    } for id_, name, description, language, voice, created_at, updated_at in rows]
