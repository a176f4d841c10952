"""Every benchmark of bench/run.py still runs (issue 34: the phone benchmark crashed before it
measured anything, and nothing noticed): `bench/run.py --smoke` runs each one once at its
smallest (one round, one turn, a second of load, small data) in processes of its own, as
`make bench` would, and says which failed. Its figures mean nothing."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.run import BENCHMARKS

ROOT = Path(__file__).resolve().parents[2]
# Minutes of servers, wrk and Whisper on two cores: not beside the recognition tests,
# whose deadlines are real (the whisper group runs on one worker, one test at a time).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("whisper")]


def test_every_benchmark_runs_in_its_smoke_mode() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("BENCH_")}
    done = subprocess.run([sys.executable, "bench/run.py", "--smoke"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1800)
    ran = set(re.findall(r"^smoke: (\w+) ran in", done.stdout, re.MULTILINE))
    assert done.returncode == 0, f"{done.stderr[-6000:]}\n{done.stdout[-3000:]}"
    assert ran == {benchmark.__name__ for benchmark in BENCHMARKS}


def test_an_unknown_benchmark_is_named() -> None:
    done = subprocess.run([sys.executable, "bench/run.py", "--smoke", "no_such_benchmark"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "no benchmark named ['no_such_benchmark']" in done.stderr
