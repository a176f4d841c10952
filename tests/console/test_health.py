import pytest
from django.db import DatabaseError
from django.test import Client
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer

from console import views
from console.engines import EngineStatus, engine_probes
from console.tenants.services import tenant_create
from tests.console.conftest import answer
from tests.queries import assert_query_count

pytestmark = pytest.mark.django_db


def test_health_reports_every_field(tenant_a, tenant_b):
    body = Client().get("/health").json()
    assert body["ok"] is True
    assert body["service"] == "stimmwerk-console"
    assert isinstance(body["contract"], str) and body["contract"]
    assert isinstance(body["usableVoiceProfile"], str)
    assert body["tenants"] == 2
    assert set(body["espeak"]) == {"engine", "mode", "usableNow"}
    assert body["espeak"]["engine"] == "espeak-ng"


def test_health_reports_the_engines_probes(db, monkeypatch):
    # The probes answer from the running system: a usable engine names the voice profile.
    monkeypatch.setitem(engine_probes.probes, "espeak", lambda: EngineStatus(
        id="espeak", kind="tts", name="eSpeak NG", engine="espeak-ng", mode="offline",
        languages=("de",), usable_now=True))
    body = Client().get("/health").json()
    assert body["espeak"]["usableNow"] is True
    assert body["usableVoiceProfile"] == "espeak/de"

    monkeypatch.setitem(engine_probes.probes, "espeak", lambda: EngineStatus(
        id="espeak", kind="tts", name="eSpeak NG", engine="espeak-ng", mode="offline",
        languages=("de",), usable_now=False, reason="missing: libespeak-ng1"))
    body = Client().get("/health").json()
    assert body["espeak"]["usableNow"] is False
    assert body["usableVoiceProfile"] == "none"


def test_health_reports_a_probe_answer_of_the_last_few_seconds_without_asking_again(db, monkeypatch):
    asked = []

    def probe():
        asked.append(1)
        return EngineStatus(id="espeak", kind="tts", name="eSpeak NG", engine="espeak-ng", mode="offline",
                            languages=("de",), usable_now=len(asked) == 1)

    monkeypatch.setitem(engine_probes.probes, "espeak", probe)
    assert [Client().get("/health").json()["espeak"]["usableNow"] for _ in range(3)] == [True] * 3
    assert len(asked) == 1
    # Asked without a maximum age (as /v2/meta/engines does), the probe answers anew.
    assert [s.usable_now for s in engine_probes.statuses() if s.id == "espeak"] == [False]


def test_health_reads_the_database_at_most_once_a_second(tenant_a, tenant_b):
    # One statement counts the tenants, one reads the SIP carriers' registrations.
    with assert_query_count(2) as statements:
        assert Client().get("/health").json()["tenants"] == 2
    assert statements[0].upper().startswith("SELECT COUNT(*)")
    with assert_query_count(0):  # within the second: what was just read
        assert Client().get("/health").json()["tenants"] == 2
    views.recent_reads.forget()  # as when the second has passed
    tenant_create(slug="initech", name="Initech")
    with assert_query_count(2):
        assert Client().get("/health").json()["tenants"] == 3


def test_the_tenant_count_is_taken_again_once_it_is_older_than_its_maximum_age(tenant_a, monkeypatch):
    counts = iter([1, 2])
    monkeypatch.setattr(views, "tenant_count", lambda: next(counts))
    clock = [100.0]
    monkeypatch.setattr(views.time, "monotonic", lambda: clock[0])
    recent = views.RecentReads(max_age=1.0)
    assert recent()["tenants"] == 1
    clock[0] += 1.0
    assert recent()["tenants"] == 1
    clock[0] += 0.01
    assert recent()["tenants"] == 2


def test_an_unreachable_database_is_asked_again_on_every_request(tenant_a, monkeypatch):
    answers = [DatabaseError("connection refused"), DatabaseError("connection refused"), 1]

    def tenant_count():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(views, "tenant_count", tenant_count)
    assert [Client().get("/health").status_code for _ in range(3)] == [503, 503, 200]
    assert Client().get("/health").json()["tenants"] == 1  # kept now


def test_health_needs_no_credentials_and_ignores_bad_ones(db):
    response = Client().get("/health", HTTP_AUTHORIZATION="Bearer nonsense")
    assert response.status_code == 200


def test_meta_engines_lists_engines_and_carriers(db):
    body = Client().get("/v2/meta/engines").json()
    assert {"engines", "carriers"} <= set(body)
    espeak = next(e for e in body["engines"] if e["id"] == "espeak")
    assert {"id", "kind", "name", "engine", "mode", "languages", "usableNow"} <= set(espeak)


def test_openapi_schema_is_open_and_describes_the_api(db):
    response = Client().get("/v2/schema", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.")
    assert {"/v2/numbers", "/v2/numbers/{id}", "/v2/assistants", "/health", "/v2/calls", "/v2/leads",
            "/v2/public/leads", "/v2/audio/scripts", "/v2/audio/render", "/v2/audio/transcribe", "/v2/usage",
            "/v2/registry/route", "/voice/v1/calls", "/voice/webhook/{carrier_id}", "/api/voice/speak",
            "/v2/meta/engines"} <= set(document["paths"])
    assert document["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"


@pytest.mark.parametrize("database", ["up", "down"])
@pytest.mark.parametrize("renderers", [[JSONRenderer], [JSONRenderer, BrowsableAPIRenderer]])
def test_a_plain_get_is_answered_without_drf_exactly_as_drf_answers(tenant_a, monkeypatch, drf_cycles, database,
                                                                   renderers):
    monkeypatch.setattr(views.HealthView, "renderer_classes", renderers)
    if database == "down":
        def unreachable():
            raise DatabaseError("connection refused")
        monkeypatch.setattr(views, "tenant_count", unreachable)
    # An Accept value the shortcut leaves to DRF, for which DRF chooses the same renderer.
    through_drf = answer(Client().get("/health", HTTP_ACCEPT="application/json; q=1"))
    assert drf_cycles == ["/health"]
    assert through_drf[0] == (200 if database == "up" else 503)
    for accept in ({}, {"HTTP_ACCEPT": "*/*"}, {"HTTP_ACCEPT": "application/json"}):
        assert answer(Client().get("/health", **accept)) == through_drf
    assert drf_cycles == ["/health"]


def test_other_requests_take_drfs_path(db, drf_cycles):
    Client().head("/health")
    Client().get("/health?format=json")
    Client().get("/health", HTTP_ACCEPT="text/html")
    assert Client().post("/health").status_code == 405
    assert drf_cycles == ["/health"] * 4
