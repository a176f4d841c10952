"""The operator groups a membership's role grants (console/tenants/roles.py)."""
from django.contrib.auth.management import create_permissions
from django.db import migrations


def create_role_groups(apps, schema_editor):
    from console.tenants.roles import ensure_role_groups

    # Permissions are normally created after all migrations ran; the groups need them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    ensure_role_groups(apps)


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0004_tenant_time_zone_choices_german_labels"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("assistants", "0001_initial"),
        ("numbers", "0001_initial"),
        ("credentials", "0001_initial"),
        ("audit", "0001_initial"),
        ("scripts_app", "0001_initial"),
        ("leads_app", "0003_rate_limit_windows"),
        ("calls_app", "0003_call_redacted"),
        ("privacy_app", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_role_groups, migrations.RunPython.noop)]
