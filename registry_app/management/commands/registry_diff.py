from django.core.management.base import BaseCommand, CommandError

from registry_app.diff import registry_diff
from registry_app.models import RegistryVersion


class Command(BaseCommand):
    help = ("Show lanes added, removed and changed field by field between two registry versions. "
            "Without arguments: the version before the current one against the current one; "
            "with one: that version against the current one.")

    def add_arguments(self, parser):
        parser.add_argument("old", nargs="?", type=int, help="older version number")
        parser.add_argument("new", nargs="?", type=int, help="newer version number (default: the current one)")

    def _version(self, number):
        version = RegistryVersion.objects.filter(number=number).first()
        if version is None:
            raise CommandError(f"No registry version {number} (see GET /v2/registry/versions).")
        return version

    def handle(self, *args, **options):
        current = RegistryVersion.objects.current()
        if current is None:
            raise CommandError("No registry has been loaded yet.")
        new = self._version(options["new"]) if options["new"] is not None else current
        if options["old"] is not None:
            old = self._version(options["old"])
        else:
            old = RegistryVersion.objects.filter(number__lt=new.number).newest_first().first()
            if old is None:
                raise CommandError(f"Version {new.number} is the first one; name two versions to compare.")
        diff = registry_diff(old.document, new.document)
        self.stdout.write(f"Version {old.number} ({old.version}) → version {new.number} ({new.version}):")
        if diff.empty:
            self.stdout.write("no differences")
        for line in diff.lines():
            self.stdout.write(line)
        self.stdout.write(f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} changed.")
