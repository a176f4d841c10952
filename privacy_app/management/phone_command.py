"""The shape of the commands that act on one caller of one tenant."""
from django.core.management.base import BaseCommand, CommandError

from console.errors import ValidationFailed
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.models import Tenant

CALL_ID_PREFIX = "cl_"


class TenantPhoneCommand(BaseCommand):
    """`<command> <tenant> <phone or call id>`: runs `self.run(tenant, e164=)` or
    `self.run(tenant, call_id=)` (an argument starting with `cl_`: one call, e.g. a web
    call of the voice agent, which has no number); a bad tenant, number or call, or a
    refusal of the service, is a CommandError that says what is wrong."""

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="the tenant's slug")
        parser.add_argument("phone", help="the number in any format, e.g. '0171 2345678', or a call's id (cl_…)")

    def handle(self, *args, tenant, phone, **options):
        one = Tenant.objects.filter(slug=tenant).first()
        if one is None:
            raise CommandError(f"No tenant '{tenant}'.")
        try:
            if phone.startswith(CALL_ID_PREFIX):
                self.run(one, call_id=phone)
            else:
                self.run(one, e164=to_e164(phone))
        except InvalidPhoneNumber as exc:
            raise CommandError(str(exc)) from None
        except ValidationFailed as exc:
            raise CommandError(" ".join(exc.details.get("phone", exc.details.get("callId", [exc.message])))) from None

    def run(self, tenant, *, e164=None, call_id=None):
        raise NotImplementedError
