"""A session's transport is checked against the registry of carrier kinds
(calls_app/kinds) instead of a choices list: a new carrier kind needs no migration.
The stored values do not change."""
from django.db import migrations, models

import agent_app.models


class Migration(migrations.Migration):

    dependencies = [
        ('agent_app', '0003_phone_transports'),
    ]

    operations = [
        migrations.AlterField(
            model_name='agentsession',
            name='transport',
            field=models.CharField(default='web', max_length=16, validators=[agent_app.models.known_transport],
                                   verbose_name='transport'),
        ),
    ]
