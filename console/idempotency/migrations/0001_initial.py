"""Takes over calls_app's IdempotencyRecord with its table and rows: state only.

The table was created by calls_app 0001 (hence the dependency, which is a migration
order, not an import); calls_app 0002 removes the model from calls_app's state.
"""
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("calls_app", "0001_initial")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="IdempotencyRecord",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("scope", models.CharField(max_length=200)),
                        ("key", models.CharField(max_length=255)),
                        ("request_hash", models.CharField(max_length=64)),
                        ("status_code", models.PositiveSmallIntegerField(null=True)),
                        ("body", models.JSONField(null=True)),
                        ("created_at", models.DateTimeField()),
                    ],
                    options={
                        "db_table": "calls_app_idempotencyrecord",
                        "indexes": [models.Index(fields=["created_at"], name="idempotency_created")],
                        "constraints": [models.UniqueConstraint(fields=("scope", "key"),
                                                                name="unique_idempotency_key")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
