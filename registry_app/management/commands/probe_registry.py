from django.core.management.base import BaseCommand, CommandError

from registry_app import snapshot
from registry_app.probes import DEFAULT_BASE_URL, DEFAULT_TIMEOUT, plan_probe, run_probes
from registry_app.routing import DEGRADED_AFTER_FAILURES
from registry_app.services import lane_health_record


class Command(BaseCommand):
    help = ("Call each lane's health check (loopback only unless --allow-remote) and record the result; "
            f"the router excludes a lane after {DEGRADED_AFTER_FAILURES} failed probes in a row. "
            "Exits 1 when a live lane fails.")

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default=DEFAULT_BASE_URL,
                            help=f"where this service answers, for health paths it serves (default {DEFAULT_BASE_URL})")
        parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per probe")
        parser.add_argument("--allow-remote", action="store_true",
                            help="also probe health URLs that leave this machine")

    def handle(self, *args, **options):
        if not 0 < options["timeout"] <= 30:
            raise CommandError("--timeout must be between 0 and 30 seconds.")
        current = snapshot.current()
        if current is None:
            raise CommandError("No registry has been loaded yet.")
        plans = [plan_probe(lane.entry, base_url=options["base_url"], allow_remote=options["allow_remote"])
                 for lane in current.lanes]
        results = run_probes(plans, timeout=options["timeout"])
        for result in results:
            health = lane_health_record(lane_id=result.lane_id, target=result.url, ok=result.ok, detail=result.detail)
            line = f"{'ok  ' if result.ok else 'FAIL'} {result.lane_id}: {result.url} ({result.detail})"
            if not result.ok:
                in_a_row = health.consecutive_failures
                state = "degraded" if in_a_row >= DEGRADED_AFTER_FAILURES else "not yet degraded"
                line += f" [{in_a_row} in a row: {state}]"
            self.stdout.write(line)
        skipped = [plan for plan in plans if not plan.url]
        for plan in skipped:
            if plan.skip_reason != "no health check":
                self.stdout.write(f"skip {plan.lane_id}: {plan.skip_reason}")
        failed = [result for result in results if not result.ok]
        self.stdout.write(f"{len(results)} probed, {len(failed)} failed, {len(skipped)} skipped.")
        # A live lane is one the registry says works now: its failure is an alarm for cron.
        live_failed = [result.lane_id for result in failed if current.by_id[result.lane_id].status == "live"]
        if live_failed:
            raise CommandError(f"{len(live_failed)} live lane(s) failed their health check: {', '.join(live_failed)}.")
