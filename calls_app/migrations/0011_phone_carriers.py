
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('calls_app', '0010_german_labels_of_the_mind'),
    ]

    operations = [
        # Added in SQL: Django would remake the calls table on SQLite for a NOT NULL
        # column, which breaks the transcript lines' triggers (migration 0006); a
        # column with a constant default needs no remake on either vendor.
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                "ALTER TABLE calls_app_call ADD COLUMN transferred_to varchar(16) NOT NULL DEFAULT ''",
                reverse_sql="ALTER TABLE calls_app_call DROP COLUMN transferred_to",
            )],
            state_operations=[migrations.AddField(
                model_name='call',
                name='transferred_to',
                field=models.CharField(blank=True, max_length=16, verbose_name='transferred to'),
            )],
        ),
        migrations.AddField(
            model_name='carrier',
            name='account_sid',
            field=models.CharField(blank=True, max_length=64, verbose_name='account SID'),
        ),
        migrations.AddField(
            model_name='carrier',
            name='api_base',
            field=models.URLField(blank=True, verbose_name='REST API base'),
        ),
        migrations.AddField(
            model_name='carrier',
            name='auth_token_sealed',
            field=models.TextField(blank=True, editable=False, verbose_name='sealed auth token'),
        ),
        migrations.AddField(
            model_name='carrier',
            name='kind',
            field=models.CharField(choices=[('signed-webhook', 'Signed webhook'), ('twilio', 'Twilio-compatible (Media Streams)'), ('asterisk', 'Asterisk (AudioSocket)')], default='signed-webhook', max_length=16, verbose_name='kind'),
        ),
        migrations.AlterField(
            model_name='call',
            name='status',
            field=models.CharField(choices=[('queued', 'Queued'), ('active', 'Active'), ('completed', 'Completed'), ('failed', 'Failed'), ('busy', 'Busy'), ('no-answer', 'No answer'), ('canceled', 'Canceled'), ('rejected', 'Rejected')], max_length=16, verbose_name='status'),
        ),
    ]
