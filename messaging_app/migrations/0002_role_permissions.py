"""The operator groups get the SMS permissions (console/tenants/roles.py): members read
the SMS, owners also choose the provider."""
from django.contrib.auth.management import create_permissions
from django.db import migrations


def grant(apps, schema_editor):
    from console.tenants.roles import ensure_role_groups

    # Permissions are normally created after all migrations ran; the groups need them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    ensure_role_groups(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("messaging_app", "0001_messaging_settings_and_sms"),
        ("tenants", "0005_operator_role_groups"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
