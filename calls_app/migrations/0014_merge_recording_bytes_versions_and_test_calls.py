# Four branches of one wave each added a 0013 (recording bytes, the assistant's version,
# the recording's announcement and test calls, a carrier's sealed credentials): joined here.
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("calls_app", "0013_call_recording_bytes"),
        ("calls_app", "0013_call_records_assistant_version"),
        ("calls_app", "0013_recording_announced_and_test_calls"),
        ("calls_app", "0013_carrier_credentials_sealed_as_one_json"),
    ]

    operations = []
