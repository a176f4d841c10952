from django.core.management.base import BaseCommand, CommandError

from calls_app.services import usage_recompute
from console.tenants.models import Tenant


class Command(BaseCommand):
    help = ("Recount the monthly usage counters from the calls and report any drift "
            "(and correct it, unless --dry-run). Exits 1 with --dry-run when drift was found.")

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="only this tenant (slug); default: all")
        parser.add_argument("--dry-run", action="store_true", help="report only, change nothing")

    def handle(self, *args, tenant=None, dry_run=False, **options):
        tenants = Tenant.objects.all()
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"No tenant '{tenant}'.")
        found = 0
        for one in tenants.iterator():
            for drift in usage_recompute(tenant=one, fix=not dry_run):
                found += 1
                self.stdout.write(f"drift {drift.tenant} {drift.period} {drift.field}: "
                                  f"counter {drift.stored}, calls say {drift.actual}")
        verb = "found" if dry_run else "corrected"
        self.stdout.write(f"{found} drifting value(s) {verb}." if found else "No drift: counters match the calls.")
        if found and dry_run:
            raise SystemExit(1)
