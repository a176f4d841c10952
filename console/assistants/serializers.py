from rest_framework import serializers

from console.assistants.models import Assistant


class AssistantSerializer(serializers.ModelSerializer):
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Assistant
        fields = ["id", "name", "description", "language", "voice", "createdAt", "updatedAt"]
        read_only_fields = fields
