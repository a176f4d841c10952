"""A carrier's credentials become one sealed JSON object declared by its kind
(calls_app/kinds): the Twilio-shaped columns go, and `kind` is checked against the
registry of kinds instead of a choices list (a new kind needs no migration).

The data step moves each carrier's account SID, auth token and REST base into the
sealed object, and back when migrating backwards. A token that cannot be unsealed
(another CARRIER_SIGNING_KEY sealed it) was unusable already and stays so: it is left
out, and `create_carrier ID --rotate --auth-token …` stores it again."""
import json

from django.db import migrations, models

import calls_app.models
from calls_app.signing import seal, unseal

FIELDS = ("account_sid", "auth_token", "api_base")


def to_sealed_json(apps, schema_editor):
    Carrier = apps.get_model("calls_app", "Carrier")
    for carrier in Carrier.objects.all():
        values = {"account_sid": carrier.account_sid, "api_base": carrier.api_base,
                  "auth_token": unseal(carrier.auth_token_sealed) if carrier.auth_token_sealed else ""}
        values = {name: value for name, value in values.items() if value}
        if values:
            carrier.credentials_sealed = seal(json.dumps(values, sort_keys=True, separators=(",", ":")))
            carrier.save(update_fields=["credentials_sealed"])


def to_columns(apps, schema_editor):
    Carrier = apps.get_model("calls_app", "Carrier")
    for carrier in Carrier.objects.exclude(credentials_sealed=""):
        try:
            values = json.loads(unseal(carrier.credentials_sealed) or "{}")
        except ValueError:
            values = {}
        carrier.account_sid = str(values.get("account_sid", ""))[:64]
        carrier.api_base = str(values.get("api_base", ""))[:200]
        carrier.auth_token_sealed = seal(values["auth_token"]) if values.get("auth_token") else ""
        carrier.save(update_fields=["account_sid", "api_base", "auth_token_sealed"])


class Migration(migrations.Migration):

    dependencies = [
        ('calls_app', '0012_turn_latency'),
    ]

    operations = [
        migrations.AddField(
            model_name='carrier',
            name='credentials_sealed',
            field=models.TextField(blank=True, editable=False, verbose_name='sealed credentials'),
        ),
        migrations.RunPython(to_sealed_json, to_columns),
        migrations.RemoveField(model_name='carrier', name='account_sid'),
        migrations.RemoveField(model_name='carrier', name='api_base'),
        migrations.RemoveField(model_name='carrier', name='auth_token_sealed'),
        migrations.AlterField(
            model_name='carrier',
            name='kind',
            field=models.CharField(default='signed-webhook', max_length=32,
                                   validators=[calls_app.models.known_carrier_kind], verbose_name='kind'),
        ),
    ]
