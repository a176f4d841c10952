from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('calls_app', '0012_turn_latency'),
    ]

    operations = [
        # Added in SQL, as 0011's transferred_to: Django would remake the calls table on
        # SQLite, which breaks the transcript lines' triggers (migration 0006); a column
        # with a constant default needs no remake on either vendor.
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                'ALTER TABLE calls_app_call ADD COLUMN recording_bytes bigint NOT NULL DEFAULT 0 '
                'CHECK ("recording_bytes" >= 0)',
                reverse_sql="ALTER TABLE calls_app_call DROP COLUMN recording_bytes",
            )],
            state_operations=[migrations.AddField(
                model_name='call',
                name='recording_bytes',
                field=models.PositiveBigIntegerField(default=0, verbose_name='recording size (bytes)'),
            )],
        ),
    ]
