from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('calls_app', '0012_turn_latency'),
    ]

    operations = [
        # Added in SQL, as in 0011: Django would remake the calls table on SQLite, which
        # breaks the transcript lines' triggers (0006); a constant default needs no remake.
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                "ALTER TABLE calls_app_call ADD COLUMN recording_announced boolean NOT NULL DEFAULT false",
                reverse_sql="ALTER TABLE calls_app_call DROP COLUMN recording_announced",
            )],
            state_operations=[migrations.AddField(
                model_name='call',
                name='recording_announced',
                field=models.BooleanField(default=False, verbose_name='recording announced'),
            )],
        ),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                "ALTER TABLE calls_app_call ADD COLUMN is_test boolean NOT NULL DEFAULT false",
                reverse_sql="ALTER TABLE calls_app_call DROP COLUMN is_test",
            )],
            state_operations=[migrations.AddField(
                model_name='call',
                name='is_test',
                field=models.BooleanField(default=False, verbose_name='test call'),
            )],
        ),
    ]
