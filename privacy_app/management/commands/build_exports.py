from django.core.management.base import BaseCommand

from privacy_app.services import exports_build_pending


class Command(BaseCommand):
    help = ("Build the exports too large to build during their request (PRIVACY_EXPORT_SYNC_ROWS). "
            "Meant for cron, e.g. every few minutes, until the scheduler runs it.")

    def handle(self, *args, **options):
        built = exports_build_pending()
        self.stdout.write(f"{built} export(s) built.")
