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

from agent_app.scenario_services import scenario_create, scenario_run_create
from calendars_app.services import calendar_create
from calls_app.carriers import sim_carrier
from calls_app.models import Call, TranscriptEntry
from calls_app.services import _web_carrier, carrier_create
from campaigns_app.contact_rows import from_json
from campaigns_app.services import blocklist_add, campaign_create, campaign_transition, contacts_add
from console.api import TenantBoundMixin
from console.assistants.models import Assistant
from console.assistants.services import assistant_publish
from console.numbers.services import number_create
from knowledge_app.services import knowledge_document_create, knowledge_synonyms_replace
from leads_app.models import Lead
from leads_app.services import lead_create
from privacy_app.services import erasure_create, export_create
from scripts_app.models import ScriptOverride
from tests.calendars_app.fake_services import FakeService
from tests.queries import assert_query_count
from tests.speech_app.audio_samples import silence, wav_file
from tools_app.services import http_tool_create
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
    ("POST", "/v2/assistants", {"name": "Neu", "tools": ["end_call", "{tool}"],
                                "transferTargets": [{"name": "Zentrale", "e164": "030 901820"}]}, 4 + AUDIT,
     "the HTTP tools it names (are they the tenant's); the tenant locked and its assistants counted (its cap);"
     " insert"),
    ("PATCH", "/v2/assistants/{assistant}", {"instructions": "Kurz und freundlich."}, 2 + AUDIT,
     "the assistant, update"),
    ("DELETE", "/v2/assistants/{assistant}", None, 9 + AUDIT,
     "the assistant, the numbers that use it (none); delete: its numbers (RESTRICT) collected, its calls' and"
     " campaigns' references cleared (SET_NULL), its versions, test cases and test runs (CASCADE), delete"),
    ("POST", "/v2/assistants/{assistant}/publish", {"note": "Neu"}, 9 + AUDIT,
     "has it test cases (none: nothing is played); the assistant, locked; its tenant, locked, and the tenant's versions counted (TENANT_MAX_ASSISTANT_VERSIONS);"
     " the latest number; insert the version; the versions (the history it is shown by)"),
    ("GET", "/v2/assistants/{assistant}/versions", None, 2, "the assistant, its versions"),
    ("GET", "/v2/assistants/{assistant}/versions/1", None, 2, "the assistant, its versions"),
    ("POST", "/v2/assistants/{assistant}/versions/1/restore", None, 4 + AUDIT,
     "the assistant, the version, the tenant's calendars (the appointment types restored name them), update"),
    ("GET", "/v2/assistants/{tested}/scenarios", None, 2, "the assistant, its scenarios"),
    ("POST", "/v2/assistants/{tested}/scenarios", {"name": "Neu", "turns": [{"text": "Hallo"}]}, 4 + AUDIT,
     "the assistant; the tenant locked and its scenarios counted (TENANT_MAX_SCENARIOS); insert"),
    ("GET", "/v2/assistants/{tested}/scenarios/{scenario}", None, 2, "the assistant, the scenario"),
    ("PATCH", "/v2/assistants/{tested}/scenarios/{scenario}", {"name": "Anders"}, 3 + AUDIT,
     "the assistant, the scenario, update"),
    ("DELETE", "/v2/assistants/{tested}/scenarios/{scenario}", None, 3 + AUDIT, "the assistant, the scenario, delete"),
    ("POST", "/v2/assistants/{tested}/scenarios/run", {"mode": "text"}, 6 + AUDIT,
     "the assistant; the tenant locked and its runs of the day counted; insert; the runs kept, older ones deleted"),
    ("GET", "/v2/assistants/{tested}/scenarios/runs", None, 2, "the assistant, its runs"),
    ("GET", "/v2/assistants/{tested}/scenarios/runs/{run}", None, 2, "the assistant, the run"),
    ("DELETE", "/v2/assistants/{tested}/scenarios/runs/{run}", None, 3 + AUDIT, "the assistant, the run, delete"),
    ("GET", "/v2/tools", None, 1, "the HTTP tools"),
    ("GET", "/v2/tools/{tool}", None, 1, "the HTTP tool"),
    ("POST", "/v2/tools", {"name": "neu", "url": "https://tools.example/neu"}, 3 + AUDIT,
     "is the name taken, the tenant's tools counted, insert"),
    ("PATCH", "/v2/tools/{tool}", {"timeoutMs": 1000}, 2 + AUDIT, "the tool, update"),
    ("DELETE", "/v2/tools/{tool}", None, 3 + AUDIT, "the tool, the assistants (which use it?), delete"),
    ("POST", "/v2/tools/{tool}/rotate-secret", {}, 3 + AUDIT, "the tool, locked, update"),
    ("GET", "/v2/numbers", None, 1, "the numbers"),
    ("GET", "/v2/numbers/{number}", None, 1, "the number"),
    ("POST", "/v2/numbers", {"e164": "+493055509999"}, 4 + AUDIT,
     "is the number taken; the tenant locked and its numbers counted (its cap); insert"),
    ("PATCH", "/v2/numbers/{number}", {"label": "Zentrale"}, 2 + AUDIT, "the number, update"),
    ("DELETE", "/v2/numbers/{number}", None, 2 + AUDIT, "the number, delete"),
    ("GET", "/v2/calls?limit=200", None, (2, 1),
     "the calls with their line ids, the lines of calls this process has not written yet (none the second time)"),
    ("GET", "/v2/calls/{call}", None, 3, "the call, its transcript lines, its replies' latencies"),
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
    ("POST", "/voice/v1/calls", {"to": "+491711234567"}, 18 + AUDIT,
     "the implicit idempotency key (the previous window's record?), its claim (read, insert) and stored answer;"
     " the carrier; the month's counter (get or create, then locked); stale reservations; the caller id;"
     " the call's assistant (the calling number's, else the tenant's first), the calling number's pin, its"
     " version; insert the call, update the counter; after the reservation committed, the call read again to dial it,"
     " the sim carrier's dial record and the call's carrier id"),
    ("GET", "/v2/privacy/settings", None, 1, "the tenant's retention settings"),
    ("PATCH", "/v2/privacy/settings", {"transcriptDays": 30}, 4 + AUDIT,
     "the settings, created with the defaults (the tenant never chose), locked, update"),
    ("GET", "/v2/privacy/exports", None, 1, "the exports"),
    ("GET", "/v2/privacy/exports/{export}", None, 1, "the export"),
    ("POST", "/v2/privacy/exports", {"phone": "+491711234567"}, 17 + AUDIT,
     "is it an own number; the tenant locked and its exports counted (its cap); the agent sessions and the calls naming it (read once for size and document); the"
     " rows (campaign contacts, leads, webhook deliveries, SMS; no calls here, so no lines or carriers); insert the"
     " export; its document (leads, deliveries, campaign contacts (no attempts without contacts), blocklist, SMS,"
     " appointments); store it (the service audits it)"),
    ("GET", "/v2/privacy/erasures", None, 1, "the erasure receipts"),
    ("GET", "/v2/privacy/erasures/{erasure}", None, 1, "the receipt"),
    ("POST", "/v2/privacy/erasures", {"phone": "+491711234567"}, 19 + AUDIT,
     "is it an own number; the agent sessions naming it, the calls (locked) and leads; its blocklist entries and"
     " campaign contacts (locked; none here, so nothing more of campaigns); delete the analyses and the tool"
     " notes naming it, the leads, the exports; blank the idempotency records, the admin log; the webhook"
     " deliveries naming it (locked), rewritten by one prepared UPDATE; its appointments and the SMS to it (deleted); the erased"
     " caller (get or create); the receipt (the service audits it)"),
    ("GET", "/v2/messaging", None, 1, "the tenant's messaging settings (with their carrier)"),
    ("PATCH", "/v2/messaging", {"templates": {"confirmation": "Ihr Termin ist bestätigt."}}, 3 + AUDIT,
     "the tenant locked (two first changes at once make one row); the settings; their insert (the tenant never"
     " chose before)"),
    ("GET", "/v2/messaging/sms", None, 1, "the tenant's SMS"),
    ("GET", "/v2/calendars", None, 1, "the calendars"),
    ("GET", "/v2/calendars/{calendar}", None, 1, "the calendar"),
    ("POST", "/v2/calendars", {"name": "Neu", "kind": "calcom", "apiKey": "cal_x", "eventTypeId": "4711"}, 3 + AUDIT,
     "(its check is a request to Cal.com) the tenant locked and its calendars counted (its cap), insert"),
    ("PATCH", "/v2/calendars/{calendar}", {"name": "Neu"}, 2 + AUDIT, "the calendar, (checked again) update"),
    ("DELETE", "/v2/calendars/{calendar}", None, 4 + AUDIT,
     "the calendar, the assistants that book in it (none); its appointments and itself deleted"),
    ("POST", "/api/voice/agent/sessions", {}, 12 + AUDIT,
     "the tenant's open sessions; the greeting's override; the answering assistant (the tenant's first), its"
     " latest version; the"
     " month's counter (get or create, then locked); stale reservations; the web carrier; insert the call, update"
     " the counter; insert the session"),
    ("GET", "/v2/webhooks", None, 1, "the endpoints"),
    ("GET", "/v2/webhooks/{webhook}", None, 1, "the endpoint"),
    ("POST", "/v2/webhooks", {"url": "https://hooks.example/new", "event_types": ["lead.created"]}, 3 + AUDIT,
     "the tenant locked (the cap), its endpoints counted, insert"),
    ("PATCH", "/v2/webhooks/{webhook}", {"active": False}, 2 + AUDIT, "the endpoint, update"),
    ("DELETE", "/v2/webhooks/{webhook}", None, 5 + AUDIT,
     "the endpoint; the deliveries and their attempts (collected, deleted), delete it"),
    ("POST", "/v2/webhooks/{webhook}/rotate-secret", {}, 4 + AUDIT, "the endpoint, locked, update, read again"),
    ("GET", "/v2/webhooks/{webhook}/deliveries?limit=200", None, 3,
     "the endpoint, the page of deliveries, their attempts"),
    ("GET", "/v2/campaigns", None, 2, "the campaigns, their counts (one grouped query)"),
    ("POST", "/v2/campaigns", {"name": "Neu", "purpose": "service"}, 5 + AUDIT,
     "the tenant's first number (the caller id); the tenant locked and its campaigns counted (its cap); insert,"
     " the counts"),
    ("GET", "/v2/campaigns/{campaign}", None, 2, "the campaign, its counts"),
    ("PATCH", "/v2/campaigns/{campaign}", {"name": "Neu"}, 4 + AUDIT, "the campaign, locked, update, the counts"),
    ("DELETE", "/v2/campaigns/{campaign}", None, 7 + AUDIT,
     "the campaign, locked; its contacts and attempts (collected, deleted), delete it"),
    ("POST", "/v2/campaigns/{campaign}/start", {}, 6 + AUDIT,
     "the campaign, locked; the counts and the webhook endpoints (campaign.started); update; the counts"),
    ("POST", "/v2/campaigns/{running}/pause", {}, 6 + AUDIT,
     "the campaign, locked; update; the counts and the webhook endpoints (campaign.paused); the counts"),
    ("POST", "/v2/campaigns/{paused}/resume", {}, 4 + AUDIT, "the campaign, locked, update, the counts"),
    ("POST", "/v2/campaigns/{running}/cancel", {}, 4 + AUDIT, "the campaign, locked, update, the counts"),
    ("GET", "/v2/campaigns/{campaign}/contacts?limit=200", None, 3,
     "the campaign, the page of contacts, their attempts"),
    ("POST", "/v2/campaigns/{campaign}/contacts", {"contacts": [{"phone": "0176 11122233"}]}, 9 + AUDIT,
     "the campaign, locked; its numbers; the tenant locked and all its contacts counted (its cap); the blocklist among the upload's, and whether it has erased entries (only"
     " then are the upload's pseudonyms looked up); insert (one statement run for all rows);"
     " the counts"),
    ("GET", "/v2/campaigns/{campaign}/results.csv", None, 1,
     "the campaign (its attempts and contacts are read while the answer streams)"),
    ("GET", "/v2/blocklist", None, 1, "the page of entries"),
    ("POST", "/v2/blocklist", {"phone": "0176 44455566"}, 7 + AUDIT,
     "is it a new entry (its cap: the tenant locked, its entries counted); an entry an erasure left under the number's pseudonym; the entry (get or create), the number's waiting"
     " contacts (locked)"),
    ("GET", "/v2/blocklist/{blocked}", None, 1, "the entry"),
    ("DELETE", "/v2/blocklist/{blocked}", None, 2 + AUDIT, "the entry, delete it"),
    ("GET", "/v2/knowledge", None, 2, "the documents, the tenant's usage"),
    ("GET", "/v2/knowledge/{knowledge}", None, 2, "the document, its passages"),
    ("POST", "/v2/knowledge", {"title": "Preise", "text": "## Aufmaß\n\nEin Aufmaß kostet 60 Euro."}, 7 + AUDIT,
     "room left, then in the transaction: the tenant locked, room left, the document, its passages, its "
     "vocabulary; the passages of the answer"),
    ("DELETE", "/v2/knowledge/{knowledge}", None, 5 + AUDIT,
     "the document, the assistants that name documents (this one?), its passages, vocabulary and itself"),
    ("GET", "/v2/knowledge/search?q=Was%20kostet%20ein%20Aufma%C3%9F%3F", None, 3,
     "the synonyms, the vocabulary, the passages"),
    ("GET", "/v2/knowledge/synonyms", None, 1, "the synonym groups"),
    ("PUT", "/v2/knowledge/synonyms", {"synonyms": [["Aufmaß", "Ausmessen"]]}, 2 + AUDIT, "delete, insert"),
]


@pytest.fixture
def calcom(settings):
    """Cal.com on loopback: a calendar's check on save reads its event type."""
    fake = FakeService([("GET", "/v2/event-types/4711",
                         lambda request: (200, {}, {"status": "success", "data": {"id": 4711, "lengthInMinutes": 30}}))])
    settings.CALENDAR_CALCOM_API_BASE = fake.url
    settings.OUTBOUND_ALLOW_PRIVATE_TARGETS = True
    yield fake
    fake.stop()


@pytest.fixture
def seeded(tenant_a, tenant_b, korean_model, calcom):
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
            assistant_publish(assistant=assistant, actor="tests")  # v1
            tool, _ = http_tool_create(tenant=tenant, data={"name": f"werkzeug_{n}", "url": f"https://t.example/{n}"})
            number = number_create(tenant=tenant, e164=f"{prefix}{n:04d}", label=assistant.name)
            call = Call.objects.create(tenant=tenant, carrier_id="testcarrier", direction="inbound",
                                       to_e164=number.e164, status="completed", started_at=moment)
            for k in range(3):
                TranscriptEntry.objects.create(call=call, role="user", text=f"Zeile {k}", ts=moment)
            lead = lead_create(tenant=tenant, kind="callback", phone="+491711234567", preferred_time=None,
                               page_url="")
            knowledge = knowledge_document_create(tenant=tenant, title=f"Wissen {n}", content_type="text/markdown",
                                                  text="## Aufmaß\n\nEin Aufmaß kostet 60 Euro.\n\n## Küchen\n\nNach Maß.")
            if n == 0:  # its test cases and runs (publishing one plays them: the other assistant is published)
                scenario = scenario_create(assistant=assistant, data={"name": "Gruß", "turns": [{"text": "Hallo"}]})
                run = scenario_run_create(assistant=assistant, queued=False)
                if tenant == tenant_a:
                    ids.update(tested=assistant.id, scenario=scenario.id, run=run.id)
            calendar = calendar_create(tenant=tenant, data={"name": f"Kalender {n}", "kind": "calcom",
                                                            "apiKey": "cal_x", "eventTypeId": "4711"})
            if tenant == tenant_a:
                ids.update(assistant=assistant.id, number=number.id, call=call.id, lead=lead.id, webhook=webhook.id,
                           tool=tool.id, knowledge=knowledge.id, calendar=calendar.id)
        ScriptOverride.objects.create(tenant=tenant, touchpoint_id=TOUCHPOINT, text="Guten Tag bei uns.")
        campaigns_made = {}
        for name in ("campaign", "running", "paused"):
            campaign = campaign_create(tenant=tenant, name=name, purpose="service")
            rows, _ = from_json([{"phone": "0176 11100011"}, {"phone": "0176 11100022"}], time_zone=tenant.time_zone,
                                now=moment)
            contacts_add(campaign=campaign, rows=rows, now=moment)
            for change in {"campaign": (), "running": ("start",), "paused": ("start", "pause")}[name]:
                campaign_transition(campaign=campaign, change=change, now=moment)
            campaigns_made[name] = campaign.id
        blocked, _ = blocklist_add(tenant=tenant, phone="0176 99900099")
        if tenant == tenant_a:
            ids.update(campaigns_made, blocked=blocked.id)
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
    if isinstance(value, list):
        return [with_ids(item, ids) for item in value]
    return value.format(**ids) if isinstance(value, str) else value


@pytest.mark.parametrize("method, path, body, queries, what", ENDPOINTS, ids=[f"{m} {p}" for m, p, *_ in ENDPOINTS])
def test_endpoint_queries_are_pinned(api_a, seeded, settings, method, path, body, queries, what):
    # Queries are under test, not speed: "verified a moment ago" holds between the two
    # requests, and the transcription (its engine loads first) has no deadline, on a
    # busy machine too (the bounds are tested in tests/credentials/test_verified_keys.py
    # and tests/speech_app/test_german_transcription.py).
    settings.API_KEY_CACHE_SECONDS = 600
    settings.STT_DEADLINE_BASE_SEC = settings.STT_DEADLINE_MAX_SEC = 600
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
                  webhook="wh_x", campaign="cp_x", running="cp_y", paused="cp_z", blocked="bl_x",
                  tool="tl_x", knowledge="kd_x", tested="as_y", scenario="sc_x", run="sr_x", calendar="cal_x")).route)
              for method, path, *_ in ENDPOINTS}
    assert tenant_bound_routes() == pinned
