"""Model hub registry: loading 10,000 generated lanes, routing and filtering on them."""
import json
import random
import resource
import time
from dataclasses import replace
from pathlib import Path

from bench.harness import compare, create_tenant_with_key, get_json, gunicorn, sized, temp_project

LANES = 10_000
STATUSES = ["live", "key-ready", "module-ready", "key-gated", "key-missing", "key-orphan", "stub", "eval",
            "degraded", "session-gated"]
UNITS = {"chat": "1M tok", "code": "1M tok", "stt": "audio-min", "tts": "1k chars", "voice-agent": "conv-min"}
PAID_MODEL = {"chat": "per-token", "code": "per-token", "stt": "per-minute", "tts": "per-character",
              "voice-agent": "per-minute"}
LANGUAGES = ["de", "en", "fr", "it", "es", "nl", "pl", "tr"]


def generated_document(base, lanes=LANES, seed=7):
    """`base` (the shipped document) with `lanes` generated lanes: every capability,
    status, hosting, price kind (0, > 0, null) and language mix, reproducibly."""
    rng = random.Random(seed)
    capabilities = base["capabilities"]
    models = []
    for n in range(lanes):
        capability = capabilities[n % len(capabilities)]
        hosting = rng.choice(["self-hosted", "subscription", "api", "api"])
        status = rng.choice(STATUSES)
        if hosting == "self-hosted":
            cost = {"model": "self-hosted", "unit": "compute", "eur": 0}
        elif hosting == "subscription":
            cost = {"model": "subscription", "unit": "flat", "eur": 0}
        else:
            cost = {"model": PAID_MODEL[capability], "unit": UNITS[capability],
                    "eur": rng.choice([None, 0, round(rng.uniform(0.001, 20), 4)])}
        params = {"streaming": rng.random() < 0.6, "model": f"model-{n % 97}"}
        if rng.random() < 0.85:
            params["languages"] = sorted(rng.sample(LANGUAGES, rng.randint(1, 4)))
        models.append({
            "id": f"{capability}-lane-{n:05d}", "name": f"Generated {capability} lane {n}", "capability": capability,
            "provider": f"Provider {n % 40:02d}", "hosting": hosting,
            "access": rng.choice(list(base["integration_layers"]) + ["api-key", "geplant"]),
            "endpoint": f"https://lane-{n}.example/v1", "health": None, "cost": cost, "status": status,
            "priority": rng.randint(1, 100), "quality_tier": rng.choice(["frontier", "high", "mid"]),
            "latency_class": rng.choice(["fast", "medium", "slow"]), "params": params,
            "test": "", "source": f"generated/{n}", "notes": "",
        })
    return {**base, "version": f"bench-{lanes}", "models": models}


_TIMINGS = """
import json, statistics, time
from registry_app import snapshot
from registry_app.routing import route
from registry_app.services import registry_load
from registry_app.validation import document_problems

def timed(call):
    started = time.perf_counter(); result = call(); return result, time.perf_counter() - started

document = json.load(open({path!r}))
problems, validate = timed(lambda: document_problems(document))
assert not problems, problems[:3]
result, load = timed(lambda: registry_load(document=document, loaded_by="bench"))
assert result.created
again, reload = timed(lambda: registry_load(document=document, loaded_by="bench"))
assert not again.created
snapshot.invalidate()
_, cold = timed(lambda: route("tts", language="de"))
samples = sorted(timed(lambda: route("tts", language="de"))[1] for _ in range(500))
print(json.dumps({{"validate": validate, "load": load, "reload": reload, "cold": cold,
                  "p50": samples[len(samples) // 2], "p99": samples[int(len(samples) * 0.99) - 1]}}))
"""


def _shipped():
    return json.loads((Path(__file__).resolve().parent.parent / "registry_app" / "data" / "registry.json").read_text())


def load_and_route_in_process(load):
    """Registry of 10,000 generated lanes: load time and in-process routing (seconds / ms)."""
    with temp_project() as project:
        path = project.tmp / "registry-10k.json"
        path.write_text(json.dumps(generated_document(_shipped(), sized(LANES, 100)), ensure_ascii=False))
        timings = json.loads(project.django(_TIMINGS.format(path=str(path))).strip().splitlines()[-1])
        project.manage("shell", "-c", "from registry_app.models import RegistryVersion; "
                                      "RegistryVersion.objects.all().delete()")
        wall, cpu = _command_seconds(project, path)
    return [
        {"step": "validate (JSON Schema + cross-field rules)", "time": f"{timings['validate']:.2f} s"},
        {"step": "registry_load (validate + write version, lanes, layers)", "time": f"{timings['load']:.2f} s"},
        {"step": "manage.py load_registry, wall clock (incl. Django start-up)", "time": f"{wall:.2f} s"},
        {"step": "manage.py load_registry, CPU time (user + system)", "time": f"{cpu:.2f} s"},
        {"step": "load the identical document again (no new version)", "time": f"{timings['reload']:.2f} s"},
        {"step": "route('tts', language='de'), first call (builds the snapshot)",
         "time": f"{timings['cold'] * 1000:.1f} ms"},
        {"step": "route('tts', language='de'), warm, p50 of 500", "time": f"{timings['p50'] * 1000:.2f} ms"},
        {"step": "route('tts', language='de'), warm, p99 of 500", "time": f"{timings['p99'] * 1000:.2f} ms"},
    ]


def _command_seconds(project, path):
    """Wall-clock and CPU seconds of the command (on a shared machine the wall clock
    includes waiting for the CPU and the disk)."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    project.manage("load_registry", str(path))
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def http(load):
    """Registry of 10,000 generated lanes over HTTP beside a bare view (2 connections: latency, not queueing)."""
    # One connection per worker, so p99 is the service time and not the wait in the queue.
    latency_load = replace(load, connections=2, threads=2)
    with temp_project() as project:
        key = create_tenant_with_key(project, "bench")
        path = project.tmp / "registry-10k.json"
        path.write_text(json.dumps(generated_document(_shipped(), sized(LANES, 100)), ensure_ascii=False))
        project.manage("load_registry", str(path))
        headers = {"Authorization": f"Bearer {key}"}
        with gunicorn(project, workers=2) as base_url:
            stt = get_json(f"{base_url}/v2/registry/models?capability=stt", headers)
            assert len(stt["models"]) == sized(LANES, 100) // 5, len(stt["models"])
            routed = get_json(f"{base_url}/v2/registry/route?capability=tts&language=de", headers)
            assert routed["candidates"], routed
            return compare(base_url, [
                ("bare view (ceiling)", "/__bench__/empty", None),
                ("GET /v2/registry/route?capability=tts&language=de", "/v2/registry/route?capability=tts&language=de",
                 headers),
                ("GET /v2/registry/route?capability=stt&language=de&streaming=1&allow_paid=0",
                 "/v2/registry/route?capability=stt&language=de&streaming=1&allow_paid=0", headers),
                ("GET /v2/registry/models?capability=stt (2,000 lanes)", "/v2/registry/models?capability=stt",
                 headers),
                ("GET /v2/registry/models/tts-lane-00003", "/v2/registry/models/tts-lane-00003", headers),
            ], latency_load)
