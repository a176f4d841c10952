"""The operator groups get the test cases' permissions (console/tenants/roles.py):
members read test cases and runs, owners write, run and erase them."""
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
        ("agent_app", "0005_scenarios_and_their_runs"),
        ("tenants", "0005_operator_role_groups"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
