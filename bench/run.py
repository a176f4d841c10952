#!/usr/bin/env python
"""Benchmarks of the console; `make bench` runs this file (see docs/performance.md).

Each entry of BENCHMARKS is a function that takes the load parameters and returns
the rows of one table (a list of dicts with the same keys); the first line of its
docstring is the table's title. `bench/run.py NAME …` runs only the named entries.
Shared helpers (throwaway project, gunicorn, wrk) are in bench/harness.py.

`bench/run.py --smoke [NAME …]` runs each benchmark once at its smallest (BENCH_SMOKE=1:
one round, one turn, a second of load): every benchmark is run even when one fails,
nothing is written to bench/results, and the exit status says whether all of them ran
(tests/bench/test_smoke.py).
"""
import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import (
    bench_agent,  # noqa: E402
    bench_audio,  # noqa: E402
    bench_audiosocket,  # noqa: E402
    bench_calendars,  # noqa: E402
    bench_calls,  # noqa: E402
    bench_campaigns,  # noqa: E402
    bench_chat,  # noqa: E402
    bench_console,  # noqa: E402
    bench_digits,  # noqa: E402
    bench_gateway,  # noqa: E402
    bench_knowledge,  # noqa: E402
    bench_leads,  # noqa: E402
    bench_pages,  # noqa: E402
    bench_phone,  # noqa: E402
    bench_privacy,  # noqa: E402
    bench_providers,  # noqa: E402
    bench_registry,  # noqa: E402
    bench_scripts,  # noqa: E402
    bench_sip,  # noqa: E402
    bench_speed,  # noqa: E402
    bench_tools,  # noqa: E402
    bench_webhooks,  # noqa: E402
    bench_whisper,  # noqa: E402
)
from bench.harness import (  # noqa: E402
    HOST,
    RESULTS_DIR,
    ROOT,
    Load,
    configure_django,
    machine_info,
    print_table,
    smoke,
)

BENCHMARKS = [
    bench_speed.tenant_bound,
    bench_registry.load_and_route_in_process, bench_registry.http,
    bench_leads.public_lead_posts, bench_leads.leads_no_loss_under_concurrency,
    bench_calls.webhook, bench_calls.reads_by_size, bench_calls.grants, bench_pages.deep_page,
    bench_scripts.linter, bench_scripts.put_latency,
    bench_audio.tts_real_time_factor, bench_audio.render_latency, bench_audio.transcription_per_format,
    bench_audio.concurrent_transcriptions, bench_audio.hostile_inputs,
    bench_gateway.overhead, bench_gateway.failover,
    bench_whisper.speed_and_memory, bench_whisper.word_error_rates, bench_whisper.sized_window,
    bench_digits.digits_round_trip,
    bench_privacy.at_the_bounds,
    bench_webhooks.deliveries_per_second, bench_webhooks.lead_posts_with_deliveries,
    bench_webhooks.two_servers_against_one,
    bench_console.dashboard_and_search,
    bench_agent.reply_latency, bench_agent.reply_latency_streaming_lane,
    bench_chat.first_sentence, bench_tools.tool_round_trip,
    bench_campaigns.import_and_tick,
    bench_knowledge.retrieval,
    bench_phone.phone_reply_latency, bench_sip.sip_reply_latency, bench_audiosocket.audiosocket_reply_latency,
    bench_calendars.find_slots_latency, bench_calendars.booking_turn_latency, bench_providers.provider_latency,
]


def main():
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed; `make bench` installs it (apt-get install wrk).")
    names = [arg for arg in sys.argv[1:] if arg != "--smoke"]
    if "--smoke" in sys.argv[1:]:
        os.environ["BENCH_SMOKE"] = "1"  # read by bench.harness (and the benchmarks' processes)
    configure_django()
    selected = [b for b in BENCHMARKS if not names or b.__name__ in names]
    if not selected or len(selected) < len(set(names)):
        sys.exit(f"no benchmark named {names}; known: {[b.__name__ for b in BENCHMARKS]}")
    if smoke():
        sys.exit(smoke_run(selected))
    load = Load.from_env()
    machine = machine_info()
    print(f"Date: {machine['date']}")
    print(f"Machine: {machine['nproc']} CPUs ({machine['cpu']}), Python {machine['python']}, {machine['wrk']}")
    print(f"Default load (a benchmark that sets its own prints it): "
          f"wrk -t{load.threads} -c{load.connections} -d{load.duration}s --latency, "
          f"{load.rounds} interleaved rounds (medians), {load.warmup}s warm-up per URL; "
          f"gunicorn 2 sync workers, SQLite, all on {HOST}")

    tables = {}
    for benchmark in selected:
        rows = benchmark(load)
        print_table(title_of(benchmark), rows)
        tables[benchmark.__name__] = rows

    RESULTS_DIR.mkdir(exist_ok=True)
    path = RESULTS_DIR / f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps({"machine": machine, "load": asdict(load), "tables": tables}, indent=2) + "\n")
    print(f"\nResults written to {path.relative_to(ROOT)}")


def title_of(benchmark: Callable[..., object]) -> str:
    """The table's title: the first line of the benchmark's docstring."""
    return (benchmark.__doc__ or benchmark.__name__).strip().splitlines()[0]


def smoke_run(selected: list[Callable[[Load], list[dict[str, Any]]]]) -> int | str:
    """Each benchmark once at its smallest; the names of those that failed (exit status 1)."""
    load, failed = Load.from_env(), []
    for benchmark in selected:
        began = time.monotonic()
        try:
            rows = benchmark(load)
            print_table(title_of(benchmark), rows)
            print(f"smoke: {benchmark.__name__} ran in {time.monotonic() - began:.0f} s", flush=True)
        except Exception:  # every benchmark runs; the failures are listed at the end
            traceback.print_exc()
            print(f"smoke: {benchmark.__name__} FAILED after {time.monotonic() - began:.0f} s", flush=True)
            failed.append(benchmark.__name__)
    if failed:
        return f"smoke: {len(failed)} of {len(selected)} benchmarks failed: {', '.join(failed)}"
    print(f"smoke: all {len(selected)} benchmarks ran")
    return 0


if __name__ == "__main__":
    main()
