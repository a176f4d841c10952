"""Settings of the benchmarks: the real settings plus the bench-only URLs (bench/urls.py)."""
from console.settings import *  # noqa: F401,F403

ROOT_URLCONF = "bench.urls"
