"""`manage.py assistant_test TENANT ASSISTANT [--version N] [--mode voice]`: plays the
assistant's test cases now (docs/api.md, "Test calls"), prints each one's result and
exits 1 when one fails (for an operator's own CI); 2 when nothing could be run."""
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from agent_app.models import ScenarioRun
from agent_app.scenario_runs import scenario_run_execute
from agent_app.scenario_services import scenario_run_create
from console.assistants.models import Assistant
from console.errors import ApiError
from console.tenants.models import Tenant


class Command(BaseCommand):
    help = "Play an assistant's test cases (scenarios) and exit non-zero when one fails."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # Our --version (of the assistant) replaces Django's (of Django).
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="the tenant's slug")
        parser.add_argument("assistant", help="the assistant's id or name")
        parser.add_argument("--version", type=int, default=None, help="a published version (default: the draft)")
        parser.add_argument("--mode", choices=ScenarioRun.Mode.values, default=ScenarioRun.Mode.TEXT)

    def handle(self, *args: Any, tenant: str, assistant: str, version: int | None, mode: str, **options: Any) -> None:
        owner = Tenant.objects.filter(slug=tenant).first()
        if owner is None:
            raise CommandError(f"No tenant {tenant!r}.", returncode=2)
        found = (Assistant.objects.for_tenant(owner).filter(pk=assistant).first()
                 or Assistant.objects.for_tenant(owner).filter(name=assistant).order_by("id").first())
        if found is None:
            raise CommandError(f"No assistant {assistant!r} in tenant {tenant!r}.", returncode=2)
        try:
            run = scenario_run_create(assistant=found, mode=mode, version=version, trigger="command", queued=False)
        except ApiError as exc:
            raise CommandError(f"{exc.code}: {exc.message}", returncode=2) from None
        scenario_run_execute(run_id=run.pk)
        run.refresh_from_db()
        for result in run.results:
            mark = "PASS" if result["passed"] else "FAIL"
            line = f"{mark}  {result['name']} ({result['scenario']})"
            if not result["passed"]:
                line += f": {result['reason']}"
            self.stdout.write(line)
        failed = sum(1 for result in run.results if not result["passed"])
        self.stdout.write(f"{len(run.results) - failed} passed, {failed} failed ({mode}, "
                          f"{'v' + str(version) if version else 'draft'}; run {run.pk})")
        if failed:
            raise CommandError(f"{failed} test case(s) failed.", returncode=1)
