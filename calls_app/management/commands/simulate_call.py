from django.core.management.base import BaseCommand, CommandError

from calls_app import sim
from calls_app.errors import MinuteCapReached
from console.numbers.models import PhoneNumber
from console.phone import InvalidPhoneNumber, to_e164
from console.tenants.models import Tenant


class Command(BaseCommand):
    help = ("Play one whole call of the built-in sim carrier (started, disclosure, transcript with a keypad note, "
            "ended) through the signed webhook: in process, or over HTTP with --base-url.")

    def add_arguments(self, parser):
        parser.add_argument("tenant", help="tenant slug")
        parser.add_argument("--direction", choices=["inbound", "outbound"], default="inbound")
        parser.add_argument("--number", help="inbound: the tenant's number called (default: its first)")
        parser.add_argument("--caller", default=sim.DEFAULT_CALLER, help="inbound: the caller's number")
        parser.add_argument("--to", default=sim.DEFAULT_CALLER, help="outbound: the number dialled")
        parser.add_argument("--seconds", type=int, default=95, help="call length (outbound: at most the grant)")
        parser.add_argument("--base-url", help="post the events to a running server instead, e.g. http://127.0.0.1:8000")
        parser.add_argument("--shuffle", action="store_true", help="deliver every event twice, in random order")

    def handle(self, *args, **options):
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant '{options['tenant']}'.")
        if not 0 <= options["seconds"] <= 24 * 3600:
            raise CommandError("--seconds must be between 0 and 86400.")
        delivery = {"base_url": options["base_url"], "shuffle": options["shuffle"], "twice": options["shuffle"]}
        try:
            if options["direction"] == "inbound":
                ident, statuses = sim.play_inbound(
                    number=self._number(tenant, options["number"]), caller=_e164(options["caller"], "--caller"),
                    seconds=options["seconds"], **delivery,
                )
            else:
                call, statuses = sim.play_outbound(
                    tenant=tenant, to=_e164(options["to"], "--to"), seconds=options["seconds"], **delivery
                )
                ident = call.pk
        except MinuteCapReached as exc:
            raise CommandError(f"Refused: {exc.message} {exc.details}") from None
        if any(status >= 300 and status != 202 for status in statuses):
            raise CommandError(f"The webhook refused events of {ident}: statuses {statuses}")
        self.stdout.write(f"Played {options['direction']} call {ident}: webhook answered {statuses}")

    def _number(self, tenant, raw):
        numbers = PhoneNumber.objects.for_tenant(tenant).order_by("e164")
        number = numbers.filter(e164=_e164(raw, "--number")).first() if raw else numbers.first()
        if number is None:
            raise CommandError(f"Tenant '{tenant.slug}' has no such number; inbound calls need one of its numbers.")
        return number


def _e164(raw, option):
    try:
        return to_e164(raw)
    except InvalidPhoneNumber as exc:
        raise CommandError(f"{option}: {exc}") from None
