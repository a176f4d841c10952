from rest_framework import serializers

from console.assistants.models import Assistant


class AssistantSerializer(serializers.ModelSerializer):
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Assistant
        fields = ["id", "name", "description", "language", "voice", "createdAt", "updatedAt"]
        read_only_fields = fields


def assistant_list_data(rows):
    """`AssistantSerializer(assistants, many=True).data` for the rows of
    `selectors.assistant_rows` (whose timestamps are text already, as DRF writes them),
    built directly (DRF's CharField is str()); tests/assistants/test_assistant_list_data.py
    checks both agree byte for byte."""
    return [{
        "id": str(id_), "name": str(name), "description": str(description), "language": str(language),
        "voice": str(voice), "createdAt": created_at, "updatedAt": updated_at,
    } for id_, name, description, language, voice, created_at, updated_at in rows]
