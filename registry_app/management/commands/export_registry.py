import json

from django.core.management.base import BaseCommand, CommandError

from registry_app.models import RegistryVersion


class Command(BaseCommand):
    help = "Print the current registry document (or an older version's) as JSON."

    def add_arguments(self, parser):
        parser.add_argument("--number", dest="number", type=int, help="a version number (default: the current one)")

    def handle(self, *args, **options):
        versions = RegistryVersion.objects.newest_first()
        version = versions.filter(number=options["number"]).first() if options["number"] else versions.first()
        if version is None:
            raise CommandError("No such registry version." if options["number"] else
                               "No registry has been loaded yet (manage.py load_registry <file>).")
        self.stdout.write(json.dumps(version.document, ensure_ascii=False, indent=2))
