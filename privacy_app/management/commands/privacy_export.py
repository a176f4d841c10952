import json

from django.core.management.base import BaseCommand, CommandError

from console.errors import ValidationFailed
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.models import Tenant
from privacy_app.models import Export
from privacy_app.services import export_create


class Command(BaseCommand):
    help = ("Export everything a tenant holds about a phone number (Art. 15) and print the JSON document "
            "(or the export's id when it is too large to build now; `build_exports` builds it).")

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="the tenant's slug")
        parser.add_argument("phone", help="the number in any format, e.g. '0171 2345678'")

    def handle(self, *args, tenant, phone, **options):
        one, e164 = tenant_and_number(tenant, phone)
        try:
            export = export_create(tenant=one, e164=e164, actor="system:privacy_export")
        except ValidationFailed as exc:
            raise CommandError(" ".join(exc.details.get("phone", [exc.message]))) from None
        if export.status != Export.Status.READY:
            self.stdout.write(f"Export {export.pk} is large: `build_exports` builds it.")
            return
        self.stdout.write(json.dumps(export.document, ensure_ascii=False, indent=2))


def tenant_and_number(slug, phone):
    """The tenant and the number in E.164, or a CommandError that says what is wrong."""
    one = Tenant.objects.filter(slug=slug).first()
    if one is None:
        raise CommandError(f"No tenant '{slug}'.")
    try:
        return one, to_e164(phone)
    except InvalidPhoneNumber as exc:
        raise CommandError(str(exc)) from None
