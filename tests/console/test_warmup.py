"""What a server worker does once when it starts (console/warmup.py, gunicorn.conf.py)."""
import logging
import re

import pytest

from console import warmup
from scripts_app import selectors
from scripts_app.catalog import catalog
from tests.live_service import LiveService

TASKS = ["console.warmup.import_url_configuration", "console.engines.ProbeRegistry.statuses",
         "scripts_app.selectors.analyse_catalog_defaults"]


def test_warm_up_asks_the_probes_and_analyses_the_catalog_defaults():
    selectors._analysis.cache_clear()
    assert list(warmup.warm_up()) == TASKS
    before = selectors._analysis.cache_info()
    for tp in catalog().values():
        selectors.EffectiveScript(tp.id, tp.text, selectors.DEFAULT, tp.max_seconds, tp.opens_call).analysis()
    after = selectors._analysis.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses) == (len(catalog()), 0)


def test_a_failing_task_is_logged_and_the_others_still_run(monkeypatch, caplog):
    ran = []

    def broken():
        raise OSError("no word list")

    def fine():
        ran.append("fine")

    monkeypatch.setattr(warmup, "_tasks", [])
    warmup.at_worker_start(broken)
    warmup.at_worker_start(fine)
    warmup.at_worker_start(fine)  # registered once
    with caplog.at_level(logging.ERROR, logger="console.warmup"):
        assert list(warmup.warm_up()) == [f"{__name__}.{fine.__qualname__}"]
    assert ran == ["fine"]
    assert "broken" in caplog.text and "no word list" in caplog.text


@pytest.mark.slow
def test_a_gunicorn_worker_is_warm_before_it_answers_its_first_request(tmp_path):
    live = LiveService(tmp_path)
    live.env["LOG_LEVEL"] = "INFO"
    try:
        live.migrate()
        base, _master = live.start()
        log = (tmp_path / f"gunicorn-{base.rsplit(':', 1)[1]}.log").read_text()
    finally:
        live.stop()
    warmed = [line for line in log.splitlines() if "Worker warmed up" in line]
    assert len(warmed) == 1 and all(task in warmed[0] for task in TASKS), log
    frozen = int(re.search(r"(\d+) objects frozen", warmed[0]).group(1))
    assert frozen > 10_000, warmed[0]

