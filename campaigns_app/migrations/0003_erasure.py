# The erasure of a number (privacy_app): the outcome `erased` of a contact that was still
# open, and the blocklist entry that keeps an erased objection by the pseudonym (erased_at).
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('campaigns_app', '0002_role_permissions'),
    ]

    operations = [
        migrations.AddField(
            model_name='blockednumber',
            name='erased_at',
            field=models.DateTimeField(blank=True, editable=False, null=True, verbose_name='number erased'),
        ),
        migrations.AlterField(
            model_name='campaignattempt',
            name='outcome',
            field=models.CharField(blank=True, choices=[('reached', 'Reached'), ('voicemail', 'Voicemail'), ('no_answer', 'No answer'), ('busy', 'Busy'), ('failed', 'Failed'), ('opted_out', 'Opted out'), ('skipped_blocklist', 'Skipped: blocklist'), ('skipped_no_consent', 'Skipped: no consent'), ('erased', 'Erased on request')], max_length=20, verbose_name='outcome'),
        ),
        migrations.AlterField(
            model_name='campaigncontact',
            name='outcome',
            field=models.CharField(blank=True, choices=[('reached', 'Reached'), ('voicemail', 'Voicemail'), ('no_answer', 'No answer'), ('busy', 'Busy'), ('failed', 'Failed'), ('opted_out', 'Opted out'), ('skipped_blocklist', 'Skipped: blocklist'), ('skipped_no_consent', 'Skipped: no consent'), ('erased', 'Erased on request')], max_length=20, verbose_name='outcome'),
        ),
    ]
