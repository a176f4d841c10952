"""The queries of every tenant-bound endpoint, pinned: authenticating the API key is
one query that brings the key's tenant along (none for a read whose key this process
verified a moment ago), selecting that tenant is none, and each endpoint's own queries
do not grow with the tenant's data. A tenant-bound route that is missing from the
table below fails the suite."""
import base64
import datetime as dt

import pytest
from django.contrib.contenttypes.models import ContentType
from django.urls import URLPattern, URLResolver, get_resolver, resolve

from calls_app.carriers import sim_carrier
from calls_app.models import Call, TranscriptEntry
from calls_app.services import _web_carrier, carrier_create
from console.api import TenantBoundMixin
from console.assistants.models import Assistant
from console.numbers.services import number_create
from knowledge_app.services import knowledge_document_create, knowledge_synonyms_replace
from leads_app.models import Lead
from leads_app.services import lead_create
from privacy_app.services import erasure_create, export_create
from scripts_app.models import ScriptOverride
from tests.queries import assert_query_count
from tests.speech_app.audio_samples import silence, wav_file
from webhooks_app.services import endpoint_create

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("render_cache_dir")]

AUTH = 1  # the API key with its tenant
AUDIT = 1  # a write's entry in the audit trail (console.audit), made in the request
TOUCHPOINT = "inbound.greeting"

# method, path (with the ids of `seeded`), JSON body, the endpoint's own queries (first, repeated: where they
# differ): what they are
ENDPOINTS = [
    ("GET", "/v2/assistants", None, 1, "the assistants"),
    ("GET", "/v2/assistants/{assistant}", None, 1, "the assistant"),
    ("GET", "/v2/numbers", None, 1, "the numbers"),
    ("GET", "/v2/numbers/{number}", None, 1, "the number"),
    ("POST", "/v2/numbers", {"e164": "+493055509999"}, 2 + AUDIT, "is the number taken, insert"),
    ("PATCH", "/v2/numbers/{number}", {"label": "Zentrale"}, 2 + AUDIT, "the number, update"),
    ("DELETE", "/v2/numbers/{number}", None, 2 + AUDIT, "the number, delete"),
    ("GET", "/v2/calls?limit=200", None, (2, 1),
     "the calls with their line ids, the lines of calls this process has not written yet (none the second time)"),
    ("GET", "/v2/calls/{call}", None, 2, "the call, its transcript lines"),
    ("GET", "/v2/usage", None, 1, "the counter row of the month"),
    ("GET", "/v2/leads", None, 1, "the leads"),
    ("GET", "/v2/leads/{lead}", None, 1, "the lead"),
    ("PATCH", "/v2/leads/{lead}", {"status": "contacted"}, 3 + AUDIT,
     "the lead, update, the tenant's webhook endpoints (lead.updated)"),
    ("GET", "/v2/audio/scripts?analyze=1", None, 1, "the tenant's overrides"),
    ("GET", f"/v2/audio/scripts/{TOUCHPOINT}", None, 1, "the override of the touchpoint"),
    ("PUT", f"/v2/audio/scripts/{TOUCHPOINT}", {"text": "Guten Tag."}, 2 + AUDIT, "upsert"),
    ("DELETE", f"/v2/audio/scripts/{TOUCHPOINT}", None, 1 + AUDIT, "delete"),
    ("GET", "/v2/audio/settings", None, 0, "the tenant came with the key"),
    ("PATCH", "/v2/audio/settings", {"recordingEnabled": True}, 1 + AUDIT, "update the tenant"),
    ("POST", "/v2/audio/render", {"touchpoint": TOUCHPOINT, "variables": {"companyName": "Acme"}}, 2,
     "the override of the touchpoint, the registry version (engine routing)"),
    ("POST", "/v2/audio/transcribe", {"audio_base64": "{audio}", "language": "ko"}, 1,
     "the registry version (engine routing); no data of the tenant"),
    ("POST", "/voice/v1/calls", {"to": "+491711234567"}, 11 + AUDIT,
     "the carrier; the month's counter (get or create, then locked); stale reservations; the caller id;"
     " insert the call, update the counter; after the reservation committed, the call read again to dial it,"
     " the sim carrier's dial record and the call's carrier id"),
    ("GET", "/v2/privacy/settings", None, 1, "the tenant's retention settings"),
    ("PATCH", "/v2/privacy/settings", {"transcriptDays": 30}, 4 + AUDIT,
     "the settings, created with the defaults (the tenant never chose), locked, update"),
    ("GET", "/v2/privacy/exports", None, 1, "the exports"),
    ("GET", "/v2/privacy/exports/{export}", None, 1, "the export"),
    ("POST", "/v2/privacy/exports", {"phone": "+491711234567"}, 10 + AUDIT,
     "is it an own number; the rows (calls, transcript lines, leads, carriers); insert the export; its"
     " document (carriers, calls with their lines, leads); store it (the service audits it)"),
    ("GET", "/v2/privacy/erasures", None, 1, "the erasure receipts"),
    ("GET", "/v2/privacy/erasures/{erasure}", None, 1, "the receipt"),
    ("POST", "/v2/privacy/erasures", {"phone": "+491711234567"}, 10 + AUDIT,
     "is it an own number; the calls (locked) and leads naming it; delete the leads, the exports; blank the"
     " idempotency records, the admin log; the erased caller (get or create); the receipt (the service audits it)"),
    ("POST", "/api/voice/agent/sessions", {}, 10 + AUDIT,
     "the tenant's open sessions; the greeting's override; the month's counter (get or create, then locked);"
     " stale reservations; the web carrier; insert the call, update the counter; insert the session"),
    ("GET", "/v2/webhooks", None, 1, "the endpoints"),
    ("GET", "/v2/webhooks/{webhook}", None, 1, "the endpoint"),
    ("POST", "/v2/webhooks", {"url": "https://hooks.example/new", "event_types": ["lead.created"]}, 1 + AUDIT,
     "insert"),
    ("PATCH", "/v2/webhooks/{webhook}", {"active": False}, 2 + AUDIT, "the endpoint, update"),
    ("DELETE", "/v2/webhooks/{webhook}", None, 5 + AUDIT,
     "the endpoint; the deliveries and their attempts (collected, deleted), delete it"),
    ("POST", "/v2/webhooks/{webhook}/rotate-secret", {}, 4 + AUDIT, "the endpoint, locked, update, read again"),
    ("GET", "/v2/webhooks/{webhook}/deliveries?limit=200", None, 3,
     "the endpoint, the page of deliveries, their attempts"),
    ("GET", "/v2/knowledge", None, 2, "the documents, the tenant's usage"),
    ("GET", "/v2/knowledge/{knowledge}", None, 2, "the document, its passages"),
    ("POST", "/v2/knowledge", {"title": "Preise", "text": "## Aufmaß\n\nEin Aufmaß kostet 60 Euro."}, 7 + AUDIT,
     "room left, then in the transaction: the tenant locked, room left, the document, its passages, its "
     "vocabulary; the passages of the answer"),
    ("DELETE", "/v2/knowledge/{knowledge}", None, 4 + AUDIT, "the document, its passages, vocabulary and itself"),
    ("GET", "/v2/knowledge/search?q=Was%20kostet%20ein%20Aufma%C3%9F%3F", None, 3,
     "the synonyms, the vocabulary, the passages"),
    ("GET", "/v2/knowledge/synonyms", None, 1, "the synonym groups"),
    ("PUT", "/v2/knowledge/synonyms", {"synonyms": [["Aufmaß", "Ausmessen"]]}, 2 + AUDIT, "delete, insert"),
]


@pytest.fixture
def seeded(tenant_a, tenant_b, korean_model):
    """Tenant A with two of everything (and tenant B with the same, which must not count)."""
    carrier_create(carrier_id="testcarrier")
    sim_carrier()
    _web_carrier()  # made by the first voice agent session, as in a server that ran a while
    moment = dt.datetime(2025, 3, 1, 10, 0, tzinfo=dt.timezone.utc)
    ids = {}
    for tenant, prefix in ((tenant_a, "+49305550"), (tenant_b, "+49305551")):
        for n in range(2):
            webhook, _ = endpoint_create(tenant=tenant, url=f"https://hooks.example/{n}", event_types=["lead.created"])
            assistant = Assistant.objects.create(tenant=tenant, name=f"Assistent {n}")
            number = number_create(tenant=tenant, e164=f"{prefix}{n:04d}", label=assistant.name)
            call = Call.objects.create(tenant=tenant, carrier_id="testcarrier", direction="inbound",
                                       to_e164=number.e164, status="completed", started_at=moment)
            for k in range(3):
                TranscriptEntry.objects.create(call=call, role="user", text=f"Zeile {k}", ts=moment)
            lead = lead_create(tenant=tenant, kind="callback", phone="+491711234567", preferred_time=None,
                               page_url="")
            knowledge = knowledge_document_create(tenant=tenant, title=f"Wissen {n}", content_type="text/markdown",
                                                  text="## Aufmaß\n\nEin Aufmaß kostet 60 Euro.\n\n## Küchen\n\nNach Maß.")
            if tenant == tenant_a:
                ids.update(assistant=assistant.id, number=number.id, call=call.id, lead=lead.id, webhook=webhook.id,
                           knowledge=knowledge.id)
        ScriptOverride.objects.create(tenant=tenant, touchpoint_id=TOUCHPOINT, text="Guten Tag bei uns.")
        knowledge_synonyms_replace(tenant=tenant, groups=[["Aufmaß", "Vermessung"]])
        export = export_create(tenant=tenant, e164="+491719999999", actor="tests")
        erasure = erasure_create(tenant=tenant, e164="+491719999998", actor="tests")
        if tenant == tenant_a:
            ids.update(export=export.id, erasure=erasure.id)
    ContentType.objects.get_for_models(Call, Lead)  # cached per process, as in a server that ran a while
    ids["audio"] = base64.b64encode(wav_file(silence(0.5), rate=16000)).decode()
    return ids


def request(client, method, path, body):
    return getattr(client, method.lower())(path, body, format="json") if body is not None \
        else getattr(client, method.lower())(path)


def with_ids(value, ids):
    if isinstance(value, dict):
        return {key: with_ids(item, ids) for key, item in value.items()}
    return value.format(**ids) if isinstance(value, str) else value


@pytest.mark.parametrize("method, path, body, queries, what", ENDPOINTS, ids=[f"{m} {p}" for m, p, *_ in ENDPOINTS])
def test_endpoint_queries_are_pinned(api_a, seeded, method, path, body, queries, what):
    path, body = with_ids(path, seeded), with_ids(body, seeded)
    # The first and a repeated request's queries, where a process cache spares the second some.
    first, repeated = queries if isinstance(queries, tuple) else (queries, queries)
    api_a.get("/v2/usage")  # the key's first use records last_used_at, once
    if method == "GET":
        with assert_query_count(AUTH + first):
            assert request(api_a, method, path, body).status_code == 200
    # The key was verified a moment ago: a read takes it from the process's cache, a
    # write still checks it against the database.
    with assert_query_count((0 if method == "GET" else AUTH) + repeated, cached_keys=True):
        response = request(api_a, method, path, body)
    assert response.status_code < 300, response.content[:500]


def tenant_bound_routes():
    """(method, route) of every URL whose view selects a tenant (console.api.TenantBoundMixin)."""
    found = set()

    def walk(patterns, prefix):
        for pattern in patterns:
            route = prefix + str(pattern.pattern).removeprefix("^") if prefix else str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
                continue
            assert isinstance(pattern, URLPattern)
            view = getattr(pattern.callback, "cls", None)
            if view is None or not issubclass(view, TenantBoundMixin):
                continue
            actions = getattr(pattern.callback, "actions", None)
            methods = actions or [m for m in ("get", "post", "put", "patch", "delete") if hasattr(view, m)]
            found.update((method.upper(), route) for method in methods if method != "head")

    walk(get_resolver().url_patterns, "")
    return found


def test_every_tenant_bound_route_is_in_the_table():
    pinned = {(method, resolve(path.split("?")[0].format(
                  assistant="as_x", number="pn_x", call="cl_x", lead="ld_x", export="ex_x", erasure="er_x",
                  webhook="wh_x", knowledge="kd_x")).route)
              for method, path, *_ in ENDPOINTS}
    assert tenant_bound_routes() == pinned
