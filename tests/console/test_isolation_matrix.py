"""The isolation matrix, generated from the URL configuration and the admin registry.

Every route is either tenant-bound (its view subclasses `TenantBoundMixin`) or on the
short list of routes that hold no tenant's data (`NOT_TENANT_BOUND`, by view or base
class); a new route that is neither fails here. Every tenant-bound route has a
scenario in `SCENARIOS`: tenant B's credential (an API key, and a staff member's
session) asks for tenant A's objects with every method the route serves, gets 404
(or only its own data), never sees anything of A, and changes nothing of A's. A
revoked key stops at once on every route. The admin: a staff member of B with every
permission opens every page of every registered tenant-data model for A's objects.

A new tenant-bound route needs a scenario; a route of another kind (e.g. gateway
routes with their own token) goes into NOT_TENANT_BOUND with its reason.
"""
import datetime
import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import URLResolver, get_resolver, reverse
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.permissions import AllowAny, IsAdminUser, IsAuthenticated
from rest_framework.test import APIClient

from agent_app import demo_views
from agent_app.models import Scenario as TestCase
from agent_app.models import ScenarioRun
from agent_app.scenario_services import scenario_create, scenario_run_create
from calendars_app.models import Appointment, Calendar
from calls_app import sim
from calls_app.models import Call, UsageCounter
from campaigns_app import services as campaigns
from campaigns_app.contact_rows import from_json
from campaigns_app.models import BlockedNumber, Campaign, CampaignAttempt, CampaignContact
from campaigns_app.scheduler import campaigns_tick
from console.api import OpenAPIView, TenantAPIView, TenantBoundMixin, TenantViewSet
from console.assistants.models import Assistant
from console.assistants.services import assistant_publish
from console.credentials.models import ApiKey
from console.credentials.services import api_key_create, api_key_revoke
from console.errors import TenantForbidden
from console.numbers.models import PhoneNumber
from console.numbers.services import number_create
from console.tenants import selection
from console.tenants.admin_scoping import visible_rows
from console.tenants.models import Membership, Tenant, TenantHost, TenantOrigin
from console.tenants.services import tenant_create
from gateway_app.views import GatewayAPIView
from knowledge_app.models import KnowledgeDocument, KnowledgePassage, KnowledgeSynonym, KnowledgeTerm
from knowledge_app.selectors import knowledge_search
from knowledge_app.services import knowledge_document_create, knowledge_synonyms_replace
from leads_app import widget_views
from leads_app.models import Lead
from leads_app.services import lead_create
from messaging_app.models import MessagingSettings, Sms
from messaging_app.services import messaging_settings_update
from privacy_app.models import Erasure, Export, RetentionSettings
from privacy_app.services import erasure_create, export_create, retention_settings_update
from registry_app.views import RegistryAPIView
from scripts_app.models import ScriptOverride
from scripts_app.services import script_override_put
from speech_app.views import ModuleHealthView, ModuleTranscribeView, SpeakView
from tests.conftest import error_of, make_client
from tools_app.models import HttpTool
from tools_app.services import http_tool_create
from webhooks_app.models import Attempt, Delivery, Endpoint
from webhooks_app.services import delivery_attempt, endpoint_create

pytestmark = pytest.mark.django_db

# Routes that hold no tenant's data, by view or by base class, each with its reason.
NOT_TENANT_BOUND = {
    OpenAPIView: "open by the contract (CONTRACT §1): /health, public leads (tenant in the body, origin and "
                 "rate checked), the signed carrier webhook, the engines list; the phone carriers' webhooks "
                 "(Twilio's signature, an Asterisk carrier's Bearer secret) and a recording's signed link",
    SpectacularAPIView: "the OpenAPI document",
    SpectacularSwaggerView: "the page that renders the OpenAPI document (/v2/docs)",
    RegistryAPIView: "the model hub registry holds no tenant data (any credential, no tenant)",
    GatewayAPIView: "the hub's gateway (/v1, /agent): its own static token, no tenant's data (usage per lane)",
    SpeakView: "the speech module needs a credential, no tenant; it reads no tenant's rows",
    ModuleTranscribeView: "the speech module needs a credential, no tenant; it reads no tenant's rows",
    ModuleHealthView: "the speech module's engine state",
    widget_views.callback_js: "the widget's script file",
    widget_views.demo_page: "the widget's demo page",
    demo_views.voice_demo_page: "the voice demo page (the demo tenant's, only where AGENT_VOICE_DEMO is on)",
    demo_views.voice_demo_session: "sessions of the demo tenant only, for its demo page",
    demo_views.demo_script: "the voice demo page's script files",
    RedirectView: "the root URL: a redirect to the admin's login, no data",
}
# Walked by the admin half of this module.
ADMIN_PREFIX = "admin/"


def url_routes(resolver=None, prefix=""):
    """(route, URL pattern) for every route of the project."""
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from url_routes(entry, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


def view_of(pattern):
    callback = pattern.callback
    return getattr(callback, "cls", None) or getattr(callback, "view_class", None) or callback


def allowed_reason(view):
    for allowed, reason in NOT_TENANT_BOUND.items():
        if view is allowed or (isinstance(view, type) and isinstance(allowed, type) and issubclass(view, allowed)):
            return reason
    return None


def tenant_bound_routes():
    return [(route, pattern) for route, pattern in url_routes()
            if isinstance(view_of(pattern), type) and issubclass(view_of(pattern), TenantBoundMixin)]


def methods_of(pattern):
    """The methods a route serves (HEAD and OPTIONS left out: DRF derives them)."""
    actions = getattr(pattern.callback, "actions", None)
    view = view_of(pattern)
    served = actions if actions else [m for m in view.http_method_names if hasattr(view, m)]
    return sorted(set(served) - {"options", "head", "trace"})


# --- Tenant A's world -----------------------------------------------------------------

@dataclass
class Scenario:
    """What tenant B sends to a tenant-bound route, and what it must get back.

    `kwargs(a)`: the URL arguments (A's object where the route has one); `bodies`:
    per method, the bodies B sends (a callable gets A's world); `status`: per method,
    the status B must get (a list: one per body)."""

    status: dict
    kwargs: object = None
    bodies: dict = field(default_factory=dict)

    def url(self, a):
        return self.kwargs(a) if self.kwargs else {}

    def requests(self, a, method):
        """(body, expected status) of each request B sends with `method`."""
        bodies = [body(a) if callable(body) else body for body in self.bodies.get(method, [None])]
        expected = self.status[method]
        return zip(bodies, expected if isinstance(expected, list) else [expected] * len(bodies), strict=True)


TOUCHPOINT = "call.hold"
SCENARIOS = {
    # B adds its own assistants; naming A's HTTP tool is naming no tool (400).
    "assistant-list": Scenario({"get": 200, "post": [201, 400]}, bodies={"post": [
        {"name": "Globex-Empfang", "tools": ["end_call"]},
        lambda a: {"name": "Globex-Empfang", "tools": [a.tool.pk]}]}),
    "assistant-detail": Scenario({"get": 404, "patch": 404, "delete": 404}, lambda a: {"pk": a.assistant.pk},
                                 bodies={"patch": [{"name": "übernommen"}]}),
    # A's versions: neither published, listed, read nor restored by B.
    "assistant-publish": Scenario({"post": 404}, lambda a: {"pk": a.assistant.pk},
                                  bodies={"post": [{"note": "übernommen"}]}),
    "assistant-versions": Scenario({"get": 404}, lambda a: {"pk": a.assistant.pk}),
    "assistant-version": Scenario({"get": 404}, lambda a: {"pk": a.assistant.pk, "number": "1"}),
    "assistant-restore": Scenario({"post": 404}, lambda a: {"pk": a.assistant.pk, "number": "1"}),
    # A's test cases and runs: neither listed, read, changed, run nor erased by B.
    "scenario-list": Scenario({"get": 404, "post": 404}, lambda a: {"assistant_id": a.assistant.pk},
                              bodies={"post": [{"name": "übernommen", "turns": [{"text": "Hallo"}]}]}),
    "scenario-detail": Scenario({"get": 404, "patch": 404, "delete": 404},
                                lambda a: {"assistant_id": a.assistant.pk, "pk": a.scenario.pk},
                                bodies={"patch": [{"name": "übernommen"}]}),
    "scenario-run": Scenario({"post": 404}, lambda a: {"assistant_id": a.assistant.pk},
                             bodies={"post": [{"mode": "text"}]}),
    "scenario-runs": Scenario({"get": 404}, lambda a: {"assistant_id": a.assistant.pk}),
    "scenario-run-detail": Scenario({"get": 404, "delete": 404},
                                    lambda a: {"assistant_id": a.assistant.pk, "run_id": a.run.pk}),
    # Tool names are unique per tenant: B may have a tool of A's name, and only sees its own.
    "tool-list": Scenario({"get": 200, "post": 201}, bodies={"post": [
        lambda a: {"name": a.tool.name, "url": "https://globex.example/tool"}]}),
    "tool-detail": Scenario({"get": 404, "patch": 404, "delete": 404}, lambda a: {"pk": a.tool.pk},
                            bodies={"patch": [{"description": "übernommen"}]}),
    "tool-rotate-secret": Scenario({"post": 404}, lambda a: {"pk": a.tool.pk}),
    # A number is one tenant's at most (it routes calls): taking A's is a conflict,
    # documented, that names nothing of A.
    "number-list": Scenario({"get": 200, "post": [400, 409]},
                            bodies={"post": [lambda a: {"e164": "+494055509999", "assistant": a.assistant.pk},
                                             lambda a: {"e164": a.number.e164}]}),
    "number-detail": Scenario({"get": 404, "patch": 404, "delete": 404}, lambda a: {"pk": a.number.pk},
                              bodies={"patch": [{"label": "übernommen"}]}),
    "lead-list": Scenario({"get": 200}),
    "lead-detail": Scenario({"get": 404, "patch": 404}, lambda a: {"pk": a.lead.pk},
                            bodies={"patch": [{"status": "contacted"}]}),
    "call-list": Scenario({"get": 200}),
    "call-detail": Scenario({"get": 404}, lambda a: {"pk": a.call.pk}),
    "usage": Scenario({"get": 200}),
    # B's own switches: changing them leaves A's alone.
    "audio-settings": Scenario({"get": 200, "patch": 200}, bodies={"patch": [{"transcriptionEnabled": False}]}),
    "scripts": Scenario({"get": 200}),
    # Touchpoints are the same catalog for all: B reads and writes its own script of
    # the touchpoint A overrode, never A's.
    "script": Scenario({"get": 200, "put": 200, "delete": 204}, lambda a: {"touchpoint_id": TOUCHPOINT},
                       bodies={"put": [{"text": "Globex bittet um einen Moment Geduld."}]}),
    "audio-render": Scenario({"post": 200}, bodies={"post": [{"touchpoint": TOUCHPOINT}]}),
    # Reads no tenant's rows; refused before any audio is decoded.
    "audio-transcribe": Scenario({"post": 400}, bodies={"post": [{"audio_base64": ""}]}),
    # B's own periods: changing them leaves A's alone.
    "privacy-settings": Scenario({"get": 200, "patch": 200}, bodies={"patch": [{"transcriptDays": 7}]}),
    # B asks about (and erases) the number of A's lead: B holds nothing of it, and
    # A's lead, calls and exports stay as they are (state_of).
    "privacy-exports": Scenario({"get": 200, "post": 201}, bodies={"post": [lambda a: {"phone": a.lead.phone}]}),
    "privacy-export": Scenario({"get": 404}, lambda a: {"export_id": a.export.pk}),
    "privacy-erasures": Scenario({"get": 200, "post": 201}, bodies={"post": [lambda a: {"phone": a.lead.phone}]}),
    "privacy-erasure": Scenario({"get": 404}, lambda a: {"erasure_id": a.erasure.pk}),
    # B lists and adds its own endpoints only.
    "webhook-list": Scenario({"get": 200, "post": 201}, bodies={"post": [
        {"url": "https://globex.example/hook", "event_types": ["lead.created"]}]}),
    "webhook-detail": Scenario({"get": 404, "patch": 404, "delete": 404}, lambda a: {"pk": a.endpoint.pk},
                               bodies={"patch": [{"active": False}]}),
    "webhook-rotate-secret": Scenario({"post": 404}, lambda a: {"pk": a.endpoint.pk}),
    "webhook-deliveries": Scenario({"get": 404}, lambda a: {"pk": a.endpoint.pk}),
    # B's own sessions only: naming A's assistant is refused, reserving nothing of A's.
    "voice-agent-sessions": Scenario({"post": [400, 201]}, bodies={"post": [
        lambda a: {"assistant": a.assistant.pk}, {}]}),
    # B's campaigns cannot name A's assistant or number (B has none of its own to call from).
    "campaign-list": Scenario({"get": 200, "post": [400, 400]}, bodies={"post": [
        lambda a: {"name": "Übernahme", "purpose": "service", "assistant": a.assistant.pk},
        lambda a: {"name": "Übernahme", "purpose": "service", "fromNumber": a.number.e164}]}),
    "campaign-detail": Scenario({"get": 404, "patch": 404, "delete": 404}, lambda a: {"pk": a.campaign.pk},
                                bodies={"patch": [{"name": "übernommen"}]}),
    "campaign-start": Scenario({"post": 404}, lambda a: {"pk": a.campaign.pk}),
    "campaign-pause": Scenario({"post": 404}, lambda a: {"pk": a.campaign.pk}),
    "campaign-resume": Scenario({"post": 404}, lambda a: {"pk": a.campaign.pk}),
    "campaign-cancel": Scenario({"post": 404}, lambda a: {"pk": a.campaign.pk}),
    "campaign-contacts": Scenario({"get": 404, "post": 404}, lambda a: {"pk": a.campaign.pk},
                                  bodies={"post": [{"contacts": [{"phone": "0176 11122233"}]}]}),
    "campaign-results": Scenario({"get": 404}, lambda a: {"pk": a.campaign.pk}),
    # B blocks the number A calls: B's own list; A's contacts and blocklist stay.
    "blocklist-list": Scenario({"get": 200, "post": 201}, bodies={"post": [lambda a: {"phone": a.contact.phone}]}),
    "blocklist-detail": Scenario({"get": 404, "delete": 404}, lambda a: {"pk": a.blocked.pk}),
    # B lists, adds, searches and names its own knowledge only. The search needs `q`,
    # which the matrix does not send (400); test_tenant_b_searching_finds_nothing_of_a
    # searches for A's words.
    "knowledge-list": Scenario({"get": 200, "post": 201}, bodies={"post": [
        {"title": "Globex-Lager", "text": "## Lieferzeiten\n\nGlobex liefert in zwei Tagen."}]}),
    # B's own calendar is checked on save: a server that does not answer is a 400 (never A's).
    "calendar-list": Scenario({"get": 200, "post": 400}, bodies={"post": [
        lambda a: {"name": a.calendar.name, "kind": "caldav", "url": "http://127.0.0.1:9/globex/",
                   "username": "globex", "password": "pw"}]}),
    "calendar-detail": Scenario({"get": 404, "patch": 404, "delete": 404}, lambda a: {"pk": a.calendar.pk},
                                bodies={"patch": [{"name": "übernommen"}]}),
    "knowledge-detail": Scenario({"get": 404, "delete": 404}, lambda a: {"pk": a.document.pk}),
    "knowledge-search": Scenario({"get": 400}),
    "knowledge-synonyms": Scenario({"get": 200, "put": 200}, bodies={"put": [
        {"synonyms": [["Lieferzeit", "Versanddauer"]]}]}),
    # B's own provider and SMS: changing them leaves A's alone; A's SMS are never listed.
    "messaging-settings": Scenario({"get": 200, "patch": 200}, bodies={"patch": [
        {"templates": {"confirmation": "Globex: Termin am {date}."}}]}),
    "messaging-sms": Scenario({"get": 200}),
    "voice-outbound-calls": Scenario({"post": 400}, bodies={"post": [
        lambda a: {"to": "+4917698765430", "leadId": a.lead.pk},
        lambda a: {"to": "+4917698765430", "from": a.number.e164},
    ]}),
}


@pytest.fixture
def world(tenant_a, tenant_b, key_a, key_b, owner, outsider, render_cache_dir):
    """Tenant A with one of everything, and the strings that must never reach B."""
    tool, _ = http_tool_create(tenant=tenant_a, data={"name": "acme_termin", "url": "https://acme-tools.example/t"})
    assistant = Assistant.objects.create(tenant=tenant_a, name="Acme-Empfang", tools=["end_call", tool.pk])
    assistant_publish(assistant=assistant, actor=f"user:{owner.username}", note="Acme-Fassung")
    number = number_create(tenant=tenant_a, e164="+493055501234", label="acme-zentrale", assistant_id=assistant.pk)
    scenario = scenario_create(assistant=assistant, data={"name": "Acme-Testfall", "turns": [{"text": "Acme-Frage"}]})
    run = scenario_run_create(assistant=assistant, queued=False)
    lead = lead_create(tenant=tenant_a, kind="callback", phone="+491701234567", page_url="https://acme.example/k")
    sim.play_inbound(number=number, caller="+4915112345670", seconds=75)
    call = Call.objects.for_tenant(tenant_a).get()
    script_override_put(tenant=tenant_a, touchpoint_id=TOUCHPOINT, text="Acme-Haltetext: bitte warten Sie kurz.")
    tenant_a.recording_enabled = True
    tenant_a.save(update_fields=["recording_enabled"])
    retention_settings_update(tenant=tenant_a, transcript_days=30)
    export = export_create(tenant=tenant_a, e164=lead.phone, actor=f"user:{owner.username}")
    erasure = erasure_create(tenant=tenant_a, e164="+4915799999990", actor=f"user:{owner.username}")
    # Sent to a port where nothing listens: one failed attempt is recorded.
    endpoint, _ = endpoint_create(tenant=tenant_a, url="http://127.0.0.1:9/acme-hook", event_types=["lead.created"])
    lead_create(tenant=tenant_a, kind="callback", phone="+491701234568")
    delivery_attempt(delivery_id=Delivery.objects.for_tenant(tenant_a).get().pk)
    document = knowledge_document_create(
        tenant=tenant_a, title="Wissen der Firma", content_type="text/markdown",
        text="## Lieferzeiten\n\nDas Zentrallager Quarkwerk liefert binnen drei Tagen.")
    knowledge_synonyms_replace(tenant=tenant_a, groups=[["Lieferzeit", "Zustelldauer", "Quarkversand"]])
    # A campaign that called its contact once (a Tuesday 10:00, inside the window).
    campaign = campaigns.campaign_create(tenant=tenant_a, name="Acme-Kampagne", purpose="service",
                                         assistant=assistant.pk)
    tuesday = datetime.datetime(2026, 11, 24, 9, 0, tzinfo=datetime.UTC)
    rows, _ = from_json([{"phone": "0176 44455566", "name": "Acme-Kontakt"}], time_zone=tenant_a.time_zone,
                        now=tuesday)
    campaigns.contacts_add(campaign=campaign, rows=rows, now=tuesday)
    campaigns.campaign_transition(campaign=campaign, change="start", now=tuesday)
    campaigns_tick(now=tuesday)
    contact = CampaignContact.objects.get(campaign=campaign)
    assert CampaignAttempt.objects.for_tenant(tenant_a).filter(contact=contact, state="dialled").exists()
    blocked, _ = campaigns.blocklist_add(tenant=tenant_a, phone="0176 99988877", note="Acme-Sperre")
    messaging_settings_update(tenant=tenant_a, data={"provider": "webhook",
                                                     "webhook_url": "https://acme-sms.example/send"})
    sms = Sms.objects.create(tenant=tenant_a, key="acme-sms-1", call_id=call.pk, to_e164="+4915112345670",
                             template="confirmation", text="Acme-SMS: Ihr Termin ist bestätigt.",
                             send_at=tuesday)
    calendar = Calendar.objects.create(tenant=tenant_a, name="Acme-Praxiskalender", kind="caldav",
                                       url="https://acme-dav.example/termine/", settings={"username": "acme-dav"})
    appointment = Appointment.objects.create(
        tenant=tenant_a, calendar=calendar, assistant_id=assistant.pk, type_name="Acme-Erstgespräch",
        starts_at=tuesday, ends_at=tuesday, caller_e164="+4917612399999", caller_name="Acme-Anruferin")
    api_key = ApiKey.objects.get(tenant=tenant_a)
    markers = ["acme", "Acme", assistant.pk, number.pk, number.e164, "acme-zentrale", lead.pk, lead.phone,
               call.pk, "Acme-Haltetext", api_key.prefix, owner.username, owner.email, export.pk, erasure.pk,
               endpoint.pk, "acme-hook", campaign.pk, "Acme-Kampagne", contact.pk, contact.phone, "Acme-Kontakt", blocked.pk,
               blocked.phone, "Acme-Sperre", tool.pk, "acme-tools", document.pk, "Quarkwerk", "Wissen der Firma",
               "Quarkversand", "Acme-Fassung", "acme-sms", sms.pk, "Acme-SMS", calendar.pk, "Acme-Praxiskalender",
               "acme-dav", appointment.pk, "Acme-Anruferin", "Acme-Erstgespräch", scenario.pk,
               "Acme-Testfall", "Acme-Frage", run.pk]
    return SimpleNamespace(tenant=tenant_a, endpoint=endpoint, tool=tool, assistant=assistant, number=number, lead=lead, call=call,
                           export=export, erasure=erasure, key=key_a, key_b=key_b, owner=owner, outsider=outsider,
                           campaign=campaign, contact=contact, blocked=blocked, document=document, markers=markers,
                           calendar=calendar, scenario=scenario, run=run)


def state_of(tenant):
    """Everything of `tenant` that B's requests could change."""
    return json.dumps([
        list(model.objects.for_tenant(tenant).order_by("pk").values())
        for model in (Assistant, PhoneNumber, Lead, Call, UsageCounter, ScriptOverride, ApiKey, Membership,
                      RetentionSettings, Export, Erasure, Endpoint, Delivery, Attempt, Campaign, CampaignContact,
                      CampaignAttempt, BlockedNumber, HttpTool, KnowledgeDocument, KnowledgePassage, KnowledgeSynonym,
                      KnowledgeTerm, MessagingSettings, Sms, Calendar, Appointment, TestCase, ScenarioRun)
    ] + [list(Tenant.objects.filter(pk=tenant.pk).values()),
         list(TenantHost.objects.filter(tenant=tenant).values()), list(TenantOrigin.objects.filter(tenant=tenant).values())],
        default=str, sort_keys=True)


def send(client, method, url, body):
    return client.generic(method.upper(), url, json.dumps(body) if body is not None else "",
                          content_type="application/json")


def assert_nothing_of_a(response, world, what, sent=""):
    """No marker of A in the response, unless B sent it itself (an id echoed in
    "no assistant 'as_…' in this tenant" tells B nothing)."""
    text = response.content.decode("utf-8", "replace")
    leaked = [marker for marker in world.markers if marker in text and marker not in sent]
    assert not leaked, f"{what} shows tenant A's {leaked}: {text[:300]}"


# --- The routes -----------------------------------------------------------------------

def test_every_route_is_tenant_bound_or_on_the_short_list():
    unclassified = []
    for route, pattern in url_routes():
        if route.startswith(ADMIN_PREFIX):
            continue
        view = view_of(pattern)
        if not (isinstance(view, type) and issubclass(view, TenantBoundMixin)) and allowed_reason(view) is None:
            unclassified.append(f"{route} ({getattr(view, '__qualname__', view)})")
    assert not unclassified, ("Neither tenant-bound nor in NOT_TENANT_BOUND (add a TenantAPIView/TenantViewSet, "
                              f"or the reason it holds no tenant's data): {unclassified}")


def test_every_tenant_bound_route_has_a_scenario():
    names = {pattern.name for _, pattern in tenant_bound_routes()}
    assert not names - set(SCENARIOS), f"add a scenario for {sorted(names - set(SCENARIOS))}"
    assert not set(SCENARIOS) - names, f"scenarios of routes that are gone: {sorted(set(SCENARIOS) - names)}"
    for _, pattern in tenant_bound_routes():
        assert set(SCENARIOS[pattern.name].status) == set(methods_of(pattern)), pattern.name


def test_tenant_viewsets_get_their_rows_from_the_base_class():
    for _, pattern in tenant_bound_routes():
        view = view_of(pattern)
        if issubclass(view, TenantViewSet):
            assert view.model is not None and hasattr(view.model.objects, "for_tenant"), view
            assert view.get_queryset is TenantViewSet.get_queryset, f"{view.__name__} writes its own get_queryset"


@pytest.mark.parametrize("name", ["dispatch", "initial", "bind_tenant", "get_permissions", "check_permissions",
                                  "get_queryset"])
def test_a_tenant_bound_view_cannot_opt_out_of_scoping_or_permissions(name):
    with pytest.raises(TypeError, match=f"cannot define {name}"):
        type("Unbound", (TenantViewSet,), {name: lambda self, *args, **kwargs: None})
    with pytest.raises(TypeError, match="IsAuthenticated"):
        type("Open", (TenantAPIView,), {"permission_classes": [AllowAny]})
    type("Stricter", (TenantAPIView,), {"permission_classes": [IsAuthenticated, IsAdminUser]})  # more is fine


@pytest.fixture(params=["api key", "staff session"])
def client_b(request, world):
    if request.param == "api key":
        return make_client(world.key_b, "globex")
    client = APIClient()
    client.force_login(world.outsider)
    client.credentials(HTTP_X_TENANT="globex")
    return client


def matrix_requests(world):
    """(method, url, body, status B must get) for every tenant-bound route and method."""
    for _, pattern in tenant_bound_routes():
        scenario = SCENARIOS[pattern.name]
        url = reverse(pattern.name, kwargs=scenario.url(world))
        for method in methods_of(pattern):
            for body, status in scenario.requests(world, method):
                yield method, url, body, status


def test_tenant_b_never_reaches_tenant_a_on_any_route(world, client_b):
    before = state_of(world.tenant)
    for method, url, body, status in matrix_requests(world):
        response = send(client_b, method, url, body)
        assert response.status_code == status, (method, url, body, response.content[:300])
        assert_nothing_of_a(response, world, f"{method.upper()} {url}", sent=url + json.dumps(body))
    assert state_of(world.tenant) == before


def test_tenant_bs_render_of_a_touchpoint_a_changed_is_bs_own(world, client_b):
    url = reverse("audio-render")
    own = send(make_client(world.key, "acme"), "post", url, {"touchpoint": TOUCHPOINT})
    untouched = tenant_create(slug="initech", name="Initech")
    default = send(make_client(api_key_create(tenant=untouched)[1], "initech"), "post", url, {"touchpoint": TOUCHPOINT})

    theirs = send(client_b, "post", url, {"touchpoint": TOUCHPOINT})

    assert theirs.status_code == own.status_code == default.status_code == 200
    assert theirs["ETag"] == default["ETag"] != own["ETag"]


def test_tenant_b_searching_finds_nothing_of_a(world, client_b):
    """B asks for A's words (and for A's document by id): no passage of A comes back,
    neither through the API nor through the function the assistant's turn calls."""
    for query in ("Quarkwerk liefert", "Wie lange dauert die Lieferzeit?", "Quarkversand"):
        response = client_b.get(reverse("knowledge-search"), {"q": query})
        assert response.status_code == 200 and response.json() == {"passages": []}, response.content
        response = client_b.get(reverse("knowledge-search"), {"q": query, "document": world.document.pk})
        assert response.status_code == 200 and response.json() == {"passages": []}, response.content
        assert knowledge_search(tenant=Tenant.objects.get(slug="globex"), query=query,
                                document_ids=[world.document.pk]) == []
    # A's own search finds it: the check above is not empty.
    assert knowledge_search(tenant=world.tenant, query="Quarkwerk liefert")


def test_a_revoked_key_stops_at_once_on_every_route(world):
    client_a = make_client(world.key, "acme")
    assert client_a.get("/v2/usage").status_code == 200
    api_key_revoke(api_key=ApiKey.objects.get(tenant=world.tenant))
    before = state_of(world.tenant)

    for method, url, body, _ in matrix_requests(world):
        response = send(client_a, method, url, body)
        assert response.status_code == 401, (method, url, response.content[:200])
    assert state_of(world.tenant) == before


# --- The admin ------------------------------------------------------------------------

def rows_of(model, tenant):
    """`model`'s rows that belong to `tenant`, found without the admin's scoping."""
    if model is Tenant:
        return model.objects.filter(pk=tenant.pk)
    if model is get_user_model():
        return model.objects.filter(memberships__tenant=tenant)
    return model._default_manager.for_tenant(tenant)


def tenant_data_admins():
    return sorted(((model, model_admin) for model, model_admin in admin.site._registry.items()
                   if visible_rows(model, get_user_model()(is_superuser=True)) is not None),
                  key=lambda item: item[0]._meta.label)


def staff_with_every_permission(user):
    user.user_permissions.set(Permission.objects.all())
    client = Client()
    client.force_login(user)
    return client


def admin_url(model, suffix=""):
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/{suffix}"


def test_the_admin_shows_a_member_of_b_nothing_of_tenant_a(world):
    b = staff_with_every_permission(world.outsider)
    a = staff_with_every_permission(world.owner)
    checked = []
    for model, _ in tenant_data_admins():
        mine = {str(pk) for pk in rows_of(model, world.tenant).values_list("pk", flat=True)}
        assert mine, f"tenant A has no {model._meta.label} in the matrix's data: add one to `world`"
        # A's own member sees them: the check below is not empty.
        assert {str(o.pk) for o in a.get(admin_url(model)).context["cl"].result_list} >= mine, model

        listing = b.get(admin_url(model))
        assert listing.status_code == 200
        assert not {str(o.pk) for o in listing.context["cl"].result_list} & mine, model
        assert_nothing_of_a(listing, world, f"the {model._meta.label} list")
        add = b.get(admin_url(model, f"add/?tenant={world.tenant.pk}&touchpoint_id={TOUCHPOINT}"))
        if add.status_code == 200:  # where adding is allowed at all
            assert_nothing_of_a(add, world, f"the {model._meta.label} add page")

        unknown = "999999999" if model._meta.pk.get_internal_type().endswith("AutoField") else "xx_unknown"
        for page in ("change/", "history/", "delete/"):
            expected = b.get(admin_url(model, f"{unknown}/{page}"))
            for pk in mine:
                response = b.get(admin_url(model, f"{pk}/{page}"))
                assert (response.status_code, response.get("Location")) == (
                    expected.status_code, expected.get("Location")), (model, pk, page)

        b.post(admin_url(model), {"action": "delete_selected", "_selected_action": sorted(mine), "post": "yes"})
        # Shows (and so drops) the messages that echo the ids B asked for ("… with ID
        # 'as_…' doesn't exist"), which the next model's list would show otherwise.
        b.get("/admin/")
        assert {str(pk) for pk in rows_of(model, world.tenant).values_list("pk", flat=True)} == mine, model
        checked.append(model._meta.label)
    assert {"tenants.Tenant", "leads_app.Lead", "calls_app.Call", "auth.User"} <= set(checked)


def test_admin_lookups_offer_a_member_of_b_nothing_of_tenant_a(world):
    b = staff_with_every_permission(world.outsider)
    checked = 0
    for source, _ in admin.site._registry.items():
        for relation in source._meta.get_fields():
            target = getattr(relation, "related_model", None)
            if not (relation.is_relation and relation.concrete and target in admin.site._registry):
                continue
            if visible_rows(target, world.owner) is None or not admin.site._registry[target].search_fields:
                continue
            mine = {str(pk) for pk in rows_of(target, world.tenant).values_list("pk", flat=True)}
            response = b.get("/admin/autocomplete/", {"app_label": source._meta.app_label,
                                                      "model_name": source._meta.model_name,
                                                      "field_name": relation.name, "term": ""})
            assert response.status_code == 200, (source, relation.name)
            assert not {item["id"] for item in response.json()["results"]} & mine, (source, relation.name)
            checked += 1
    assert checked >= 8


def test_the_effective_scripts_page_shows_a_member_of_b_only_bs_scripts(world):
    page = staff_with_every_permission(world.outsider).get("/admin/scripts_app/scriptoverride/effective/?tenant=acme")

    assert page.status_code == 200
    assert_nothing_of_a(page, world, "the effective scripts page")


# --- One tenant rule ------------------------------------------------------------------

@pytest.mark.parametrize("credential", ["api key", "staff session"])
def test_a_rule_added_to_the_one_tenant_rule_holds_on_every_route_fast_or_not(world, credential, monkeypatch,
                                                                             settings, drf_cycles):
    """A tenant suspended in one place, the tenant rule (console/tenants/selection.py),
    answers 403 on every tenant-bound route, list and detail, read and write, whichever
    path answers: DRF's, or the verified reads' (console/verified_reads.py), which answer
    the reads of a key verified a moment ago without DRF's cycle."""
    settings.API_KEY_CACHE_SECONDS = 600  # "a moment ago" holds on a busy machine too
    if credential == "api key":
        client = make_client(world.key, "acme")
    else:
        client = APIClient()
        client.force_login(world.owner)
        client.credentials(HTTP_X_TENANT="acme")
    requests = list(matrix_requests(world))
    reads = {url for method, url, _body, _status in requests if method == "get"}
    client.get("/v2/usage")  # verifies the key
    drf_cycles.clear()
    for url in sorted(reads):
        assert client.get(url).status_code in (200, 400), url  # 400: the knowledge search without `q`
    fast = reads - set(drf_cycles)
    assert fast >= ({"/v2/assistants", "/v2/leads", "/v2/calls", "/v2/usage", reverse(
        "lead-detail", kwargs={"pk": world.lead.pk})} if credential == "api key" else set()), fast

    rule = selection.tenant_for_request

    def suspending_acme(request):
        tenant = rule(request)
        if tenant.slug == "acme":
            raise TenantForbidden()
        return tenant

    monkeypatch.setattr(selection, "tenant_for_request", suspending_acme)
    before = state_of(world.tenant)
    for method, url, body, _status in requests * 2:
        response = send(client, method, url, body)
        assert (response.status_code, error_of(response)["code"]) == (403, "tenant_forbidden"), (method, url)
    assert state_of(world.tenant) == before
