"""The operator groups get the knowledge's permissions (console/tenants/roles.py):
members read and upload documents, owners also delete them and edit synonyms."""
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
        ("knowledge_app", "0002_full_text_index"),
        ("tenants", "0005_operator_role_groups"),
    ]

    operations = [migrations.RunPython(grant, migrations.RunPython.noop)]
