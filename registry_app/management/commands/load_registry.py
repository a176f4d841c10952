import getpass
import json
import sys

from django.core.management.base import BaseCommand, CommandError

from registry_app.errors import InvalidRegistryDocument
from registry_app.services import registry_load


def read_document(path):
    """The parsed JSON of `path` (`-` reads standard input), or a CommandError."""
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CommandError(f"{path} is not UTF-8 text.") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None


class Command(BaseCommand):
    help = ("Validate a registry document and make it the current version (all or nothing). "
            "Prints every problem with its JSON path and exits non-zero if it is invalid.")

    def add_arguments(self, parser):
        parser.add_argument("file", help="the registry JSON document ('-' for standard input)")
        parser.add_argument("--by", default=None, help="who loads it (default: the operating-system user)")

    def handle(self, *args, **options):
        document = read_document(options["file"])
        loaded_by = options["by"] or getpass.getuser()
        try:
            result = registry_load(document=document, loaded_by=loaded_by)
        except InvalidRegistryDocument as exc:
            for problem in exc.problems:
                self.stderr.write(str(problem))
            raise CommandError(f"{options['file']}: {len(exc.problems)} problem(s); nothing was changed.") from None
        version = result.version
        if result.created:
            self.stdout.write(f"Loaded registry {version.version} ({version.updated}) as version {version.number} "
                              f"with {version.lane_count} lanes.")
        else:
            self.stdout.write(f"Unchanged: identical to the current version {version.number} "
                              f"({version.version}); no new version.")
