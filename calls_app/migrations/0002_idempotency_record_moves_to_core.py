"""IdempotencyRecord now belongs to the core (console.idempotency): state only, the
table and its rows stay where they are."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("calls_app", "0001_initial"),
        ("idempotency", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="IdempotencyRecord")],
            database_operations=[],
        ),
    ]
