"""Every assistant that exists when versions come is published as v1 from its current
state, so every phone number keeps answering exactly as before (an assistant created
later and never published answers with its draft)."""
from django.db import migrations

UNVERSIONED = {"id", "tenant", "created_at", "updated_at"}  # as console.assistants.selectors


def publish_v1(apps, schema_editor):
    Assistant = apps.get_model("assistants", "Assistant")
    AssistantVersion = apps.get_model("assistants", "AssistantVersion")
    fields = [field.attname for field in Assistant._meta.concrete_fields if field.name not in UNVERSIONED]
    published = set(AssistantVersion.objects.values_list("assistant_id", flat=True))
    for assistant in Assistant.objects.exclude(pk__in=published).iterator(chunk_size=500):
        AssistantVersion.objects.create(
            tenant_id=assistant.tenant_id, assistant=assistant, number=1, published_by="migration",
            note="Stand bei der Einführung der Versionen",
            snapshot={name: getattr(assistant, name) for name in fields})


class Migration(migrations.Migration):

    dependencies = [
        ("assistants", "0006_assistant_versions"),
        # The greeting is part of what v1 records.
        ("assistants", "0006_assistant_greeting"),
    ]

    operations = [
        migrations.RunPython(publish_v1, migrations.RunPython.noop),
    ]
