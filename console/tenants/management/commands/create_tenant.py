from django.core.management.base import BaseCommand, CommandError

from console.errors import ValidationFailed
from console.tenants.services import tenant_create


class Command(BaseCommand):
    help = "Create a tenant."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="2–63 characters: a-z, 0-9 and '-'")
        parser.add_argument("--name", required=True, help="display name")
        parser.add_argument("--minute-cap", type=int, help="outbound minutes per month (0: none)")
        parser.add_argument("--max-call-minutes", type=int, help="longest outbound call in minutes (default 10)")
        parser.add_argument("--time-zone", help="IANA time zone (default Europe/Berlin)")
        parser.add_argument("--host", action="append", default=[], help="host name that selects the tenant (repeatable)")
        parser.add_argument("--origin", action="append", default=[], help="web origin allowed to post leads (repeatable)")

    def handle(self, *args, **options):
        for option in ("minute_cap", "max_call_minutes"):
            if options[option] is not None and options[option] < 0:
                raise CommandError(f"--{option.replace('_', '-')} must not be negative.")
        try:
            tenant = tenant_create(
                slug=options["slug"], name=options["name"], minute_cap=options["minute_cap"],
                max_call_minutes=options["max_call_minutes"], time_zone=options["time_zone"],
                hosts=options["host"], origins=options["origin"],
            )
        except ValidationFailed as exc:
            raise CommandError(format_details(exc.details)) from None
        self.stdout.write(f"Created tenant {tenant.slug} ({tenant.name}).")


def format_details(details):
    return "; ".join(f"{field}: {' '.join(map(str, messages))}" for field, messages in details.items())
