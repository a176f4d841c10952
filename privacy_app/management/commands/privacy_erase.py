import json

from django.core.management.base import BaseCommand, CommandError

from console.errors import ValidationFailed
from privacy_app.management.commands.privacy_export import tenant_and_number
from privacy_app.serializers import erasure_json
from privacy_app.services import erasure_create


class Command(BaseCommand):
    help = ("Erase a phone number from everything of a tenant (Art. 17) and print the receipt. "
            "Cannot be undone; running it again erases nothing more.")

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="the tenant's slug")
        parser.add_argument("phone", help="the number in any format, e.g. '0171 2345678'")

    def handle(self, *args, tenant, phone, **options):
        one, e164 = tenant_and_number(tenant, phone)
        try:
            receipt = erasure_create(tenant=one, e164=e164, actor="system:privacy_erase")
        except ValidationFailed as exc:
            raise CommandError(" ".join(exc.details.get("phone", [exc.message]))) from None
        self.stdout.write(json.dumps(erasure_json(receipt), indent=2))
