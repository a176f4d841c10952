from django.core.management.base import BaseCommand, CommandError

from console.credentials.services import api_key_create
from console.tenants.models import Tenant


class Command(BaseCommand):
    help = "Create an API key for a tenant. The key is printed once, alone on the last line."

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="tenant slug")
        parser.add_argument("--name", default="", help="what the key is for")

    def handle(self, *args, **options):
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant '{options['tenant']}'. Create it with: manage.py create_tenant")
        api_key, raw_key = api_key_create(tenant=tenant, name=options["name"])
        self.stdout.write(f"API key {api_key.id} for tenant {tenant.slug}. Store it now; it is not shown again:")
        self.stdout.write(raw_key)
