from django.core.management.base import BaseCommand, CommandError

from console.tenants.models import Tenant
from privacy_app.services import pending_events_purge, retention_apply


class Command(BaseCommand):
    help = ("Remove what is older than each tenant's retention periods: transcript lines (with the voice agent's "
            "sessions), recording links, leads, webhook deliveries, expired exports (docs/privacy.md). Meant for "
            "cron, e.g. nightly. Usage counters never change.")

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="only this tenant (slug); default: all")
        parser.add_argument("--dry-run", action="store_true", help="count what would be removed, remove nothing")

    def handle(self, *args, tenant=None, dry_run=False, **options):
        tenants = Tenant.objects.order_by("slug")
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"No tenant '{tenant}'.")
        verb = "would remove" if dry_run else "removed"
        for one in tenants.iterator():
            counts = retention_apply(tenant=one, dry_run=dry_run)
            found = ", ".join(f"{count} {kind}" for kind, count in counts.items() if count)
            self.stdout.write(f"{one.slug}: {verb} {found}" if found else f"{one.slug}: nothing past its period")
        if not tenant and not dry_run:
            purged = pending_events_purge()
            if purged:
                self.stdout.write(f"{purged} carrier event(s) that never found their call removed")
