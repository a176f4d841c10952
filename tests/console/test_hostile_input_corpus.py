"""Every route of /v2, /voice and /api/voice, walked from the URL configuration, gets
a corpus of hostile input: bodies nested thousands deep, NUL characters and lone
surrogates, wrong types, huge strings, control characters, RTL marks, absurd numbers,
empty and duplicate keys, garbage in path segments, query parameters and headers.

Each answer must be a 4xx error in the contract's shape or a documented success, never
a 5xx; bodies nested too deeply are 400 `malformed_json`, NUL and lone surrogates 400
`validation_error` naming the field. A route with a body that has no valid example
below fails the test, so a new endpoint cannot be left out."""
import base64
import json
import re
from urllib.parse import parse_qsl, quote, urlencode

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from twilio.request_validator import RequestValidator

from agent_app.scenario_services import scenario_create, scenario_run_create
from calendars_app.models import Calendar
from calls_app.models import Call
from calls_app.services import carrier_create
from calls_app.signing import signature_header
from campaigns_app.services import blocklist_add, campaign_create
from console.assistants.models import Assistant
from console.numbers.services import number_create
from knowledge_app.services import knowledge_document_create
from leads_app.services import lead_create
from privacy_app import services as privacy
from registry_app.demo import SHIPPED_DOCUMENT
from registry_app.services import registry_load
from tests.speech_app.audio_samples import encode, silence
from tools_app.services import http_tool_create
from webhooks_app.services import endpoint_create

# A burst: thousands of hostile requests over every route, with real speech engines.
pytestmark = pytest.mark.slow
PREFIXES = ("v2/", "voice/", "api/voice/")
BODY_METHODS = ("post", "put", "patch")
HOSTILE = "__hostile__"
CARRIER = "corpuscarrier"
# The phone carriers: requests to their webhooks are signed (Twilio) or carry the
# carrier's secret (Asterisk), so that the hostile input reaches the views behind.
TWILIO_CARRIER, TWILIO_TOKEN, ASTERISK_CARRIER = "corpustwilio", "corpus-auth-token", "corpusasterisk"
CALLED = "+493055500777"


def _routes():
    """(route, pattern, view class, {method: action}) of every API route."""
    found = []

    def walk(patterns, prefix):
        for entry in patterns:
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + str(entry.pattern))
            elif isinstance(entry, URLPattern):
                route = prefix + str(entry.pattern)
                view = getattr(entry.callback, "cls", None)
                if not route.startswith(PREFIXES) or view is None:
                    continue
                actions = getattr(entry.callback, "actions", None) or {
                    m: m for m in ("get", "post", "put", "patch", "delete") if hasattr(view, m)}
                found.append((route, entry.pattern, view, dict(actions)))

    walk(get_resolver().url_patterns, "")
    return found


ROUTES = _routes()


# --- the valid request of each route that the corpus then spoils -----------------------------

def _wav():
    return encode(silence(0.3), 16000, "wav")


ASSISTANT = {
    "name": "Empfang", "description": "Rezeption", "language": "de", "voice": "de+f3",
    "instructions": "Sie sind die Telefonassistenz der Praxis.", "openingTouchpoint": "inbound.greeting",
    "tools": ["create_callback", "transfer_call"], "knowledge": [],  # the tenant's document's id (templates)
    "model": {"capability": "chat", "lane": None, "temperature": 0.3, "maxTokens": 200},
    "transferTargets": [{"name": "Zentrale", "e164": "030 901820"}],
    "analysis": {"summary": True, "schema": {"type": "object", "properties": {"grund": {"type": "string"}}},
                 "successCriteria": "Rückruf vereinbart."},
    "maxDurationSec": 300, "silenceTimeoutSec": 20, "endCallPhrases": ["Auf Wiederhören"],
}
# A CalDAV calendar on a loopback port where nothing listens: its check fails at once (400).
CALENDAR = {"name": "Praxis", "kind": "caldav", "url": "http://127.0.0.1:9/dav/praxis/", "username": "praxis",
            "password": "app-passwort"}
SCENARIO = {"name": "Rückruf", "turns": [{"text": "Rufen Sie mich zurück.", "dtmf": "1",
                                         "expectations": [{"type": "said", "pattern": "(?i)zurück"}]}],
            "variables": {"callerNumber": "0171 2345678"}, "toolStubs": {"termin": {"frei": True}},
            "expectations": [{"type": "tool_called", "tool": "create_callback", "arguments": {"phone": "0171"}},
                             {"type": "judge", "rubric": "Höflich."}], "realTools": False}
TOOL = {"name": "termin", "description": "Prüft Termine.", "url": "https://tools.acme.example/termin",
        "parameters": {"type": "object", "properties": {"datum": {"type": "string"}}}, "timeoutMs": 2000}


def templates(objects):
    """{(route, method): body} — a valid body for every route and method that takes one."""
    wav64 = base64.b64encode(_wav()).decode()
    return {
        ("v2/^numbers$", "post"): {"e164": "+493055500111", "label": "Zentrale", "assistant": None},
        ("v2/^assistants/(?P<pk>[^/]+)/publish$", "post"): {"note": "Neue Öffnungszeiten"},
        ("v2/^assistants/(?P<pk>[^/]+)/versions/(?P<number>[0-9]{1,9})/restore$", "post"): {},
        ("v2/^numbers/(?P<pk>[^/]+)$", "patch"): {"label": "Empfang", "assistant": objects["assistant"]},
        ("v2/^assistants/(?P<assistant_id>[^/]+)/scenarios$", "post"): SCENARIO,
        ("v2/^assistants/(?P<assistant_id>[^/]+)/scenarios/(?P<pk>[^/]+)$", "patch"): {**SCENARIO, "name": "Neu"},
        ("v2/^assistants/(?P<assistant_id>[^/]+)/scenarios/run$", "post"): {"mode": "text", "version": None},
        ("v2/audio/settings", "patch"): {"recordingEnabled": True, "transcriptionEnabled": False},
        ("v2/audio/scripts/<str:touchpoint_id>", "put"): {"text": "Bitte bleiben Sie dran."},
        ("v2/audio/render", "post"): {"touchpoint": "callback.confirmation", "voice": "de",
                                      "variables": {"firstName": "Anna", "preferredTime": "heute", "phone": "0171"}},
        ("v2/public/leads", "post"): {"tenant": "acme", "kind": "callback", "phone": "0171 2345678",
                                      "preferred_at": "asap", "page_url": "https://acme.example/k"},
        ("v2/^leads/(?P<pk>[^/]+)$", "patch"): {"status": "contacted"},
        ("v2/^knowledge$", "post"): {"title": "Häufige Fragen", "text": "## Öffnungszeiten\n\nMontag bis Freitag.",
                                     "contentType": "text/markdown"},
        ("v2/knowledge/synonyms", "put"): {"synonyms": [["offen", "geöffnet"]]},
        ("v2/audio/transcribe", "post"): {"audio_base64": wav64, "filename": "a.wav", "language": "ko",
                                          "phrases": ["서울"]},
        ("voice/v1/calls", "post"): {"to": "+493055500999", "leadId": objects["lead"]},
        ("voice/webhook/<str:carrier_id>", "post"): {
            "id": "evt_corpus", "type": "call.transcript", "occurredAt": "2026-01-01T10:00:00Z",
            "data": {"carrierCallId": "CA-corpus", "role": "user", "text": "Hallo", "ts": "2026-01-01T10:00:01Z"}},
        ("api/voice/speak", "post"): {"text": "Hallo", "voice": "de"},
        ("api/voice/agent/sessions", "post"): {"language": "de", "variables": {"companyName": "Acme"},
                                               "audio": {"encoding": "mulaw", "sampleRate": 8000}},
        ("v2/privacy/settings", "patch"): {"transcriptDays": 30, "recordingDays": None, "leadDays": 365},
        ("v2/messaging", "patch"): {"provider": "webhook", "webhookUrl": "https://sms.acme.example/send",
                                    "templates": {"confirmation": "Termin am {date} um {time}."},
                                    "rotateSecret": True},
        ("v2/privacy/exports", "post"): {"phone": "0171 2345678"},
        ("v2/privacy/erasures", "post"): {"phone": "0171 9876543"},
        ("v2/^webhooks$", "post"): {"url": "https://hooks.acme.example/x", "event_types": ["lead.created"],
                                    "description": "CRM"},
        ("v2/^webhooks/(?P<pk>[^/]+)/rotate-secret$", "post"): {"keep_previous": False},
        ("v2/^webhooks/(?P<pk>[^/]+)$", "patch"): {"url": "https://hooks.acme.example/y",
                                                   "event_types": ["call.ended"], "description": "CRM",
                                                   "active": True},
        ("v2/^assistants$", "post"): {**ASSISTANT, "knowledge": [objects["knowledge"]]},
        ("v2/^assistants/(?P<pk>[^/]+)$", "patch"): {**ASSISTANT, "knowledge": [objects["knowledge"]]},
        ("v2/^tools$", "post"): TOOL,
        ("v2/^tools/(?P<pk>[^/]+)$", "patch"): {**TOOL, "name": "termin_neu"},
        ("v2/^tools/(?P<pk>[^/]+)/rotate-secret$", "post"): {"keepPrevious": False},
        ("v2/^calendars$", "post"): CALENDAR,
        ("v2/^calendars/(?P<pk>[^/]+)$", "patch"): {"name": "Praxis Nord", "password": "neu"},
        # The body is the audio itself, not JSON.
        ("api/voice/transcribe", "post"): _wav(),
        # A Twilio-compatible carrier posts forms (signed by the Runner); Asterisk's CURL() too,
        # but its registration takes JSON as well.
        ("voice/twilio/<str:carrier_id>/incoming", "post"): urlencode({
            "CallSid": "CAcorpus0001", "AccountSid": "AC" + "0" * 32, "From": "+491711234567", "To": CALLED,
            "CallStatus": "ringing", "Direction": "inbound"}).encode(),
        ("voice/twilio/<str:carrier_id>/status", "post"): urlencode({
            "CallSid": "CAcorpus0001", "CallStatus": "completed", "CallDuration": "12"}).encode(),
        ("voice/asterisk/<str:carrier_id>/calls", "post"): {"from": "+491711234567", "to": CALLED},
        # A warm hand-over's leg to the person (Twilio's form).
        ("voice/twilio/<str:carrier_id>/warm", "post"): urlencode({
            "CallSid": "CAcorpus0002", "CallStatus": "in-progress"}).encode(),
        # ... and an Asterisk dialplan's outcome of one (CURL()'s form: Dial's DIALSTATUS).
        ("voice/asterisk/<str:carrier_id>/calls/<str:call_uuid>/warm", "post"): urlencode({
            "status": "NOANSWER"}).encode(),
        ("v2/^campaigns$", "post"): {"name": "Erinnerung", "purpose": "service", "maxAttempts": 3,
                                     "window": {"mon": {"start": "09:00", "end": "18:00"}}},
        ("v2/^campaigns/(?P<pk>[^/]+)$", "patch"): {"name": "Neu", "concurrency": 1,
                                                    "window": {"tue": {"start": "10:00", "end": "12:00"}}},
        ("v2/^campaigns/(?P<pk>[^/]+)/contacts$", "post"): {"contacts": [{"phone": "0176 11122233", "name": "Jü"}]},
        ("v2/^blocklist$", "post"): {"phone": "0176 44455566", "note": "Beschwerde"},
        # State changes take no body (an empty one, or {}); anything else is refused.
        **{(f"v2/^campaigns/(?P<pk>[^/]+)/{change}$", "post"): b"" for change in ("start", "pause", "resume",
                                                                                  "cancel")},
    }


def path_values(objects):
    """The existing object each path parameter names, per route."""
    return {
        "v2/^assistants/(?P<pk>[^/]+)$": {"pk": objects["assistant"]},
        **{f"v2/^assistants/(?P<pk>[^/]+){suffix}$": {"pk": objects["assistant"]}
           for suffix in ("/versions", "/publish")},
        **{f"v2/^assistants/(?P<pk>[^/]+)/versions/(?P<number>[0-9]{{1,9}}){suffix}$": {
            "pk": objects["assistant"], "number": "1"} for suffix in ("", "/restore")},
        "v2/^numbers/(?P<pk>[^/]+)$": {"pk": objects["number"]},
        **{f"v2/^assistants/(?P<assistant_id>[^/]+)/scenarios{suffix}$": {"assistant_id": objects["assistant"]}
           for suffix in ("", "/run", "/runs")},
        "v2/^assistants/(?P<assistant_id>[^/]+)/scenarios/(?P<pk>[^/]+)$": {
            "assistant_id": objects["assistant"], "pk": objects["scenario"]},
        "v2/^assistants/(?P<assistant_id>[^/]+)/scenarios/runs/(?P<run_id>[^/]+)$": {
            "assistant_id": objects["assistant"], "run_id": objects["run"]},
        "v2/^leads/(?P<pk>[^/]+)$": {"pk": objects["lead"]},
        "v2/^calls/(?P<pk>[^/]+)$": {"pk": objects["call"]},
        "v2/audio/scripts/<str:touchpoint_id>": {"touchpoint_id": "call.hold"},
        "v2/registry/models/<str:lane_id>": {"lane_id": objects["lane"]},
        "v2/^registry/versions/(?P<number>[0-9]{1,18})$": {"number": "1"},
        "voice/webhook/<str:carrier_id>": {"carrier_id": CARRIER},
        "v2/privacy/exports/<str:export_id>": {"export_id": objects["export"]},
        "v2/privacy/erasures/<str:erasure_id>": {"erasure_id": objects["erasure"]},
        "v2/^webhooks/(?P<pk>[^/]+)$": {"pk": objects["webhook"]},
        "v2/^knowledge/(?P<pk>[^/]+)$": {"pk": objects["knowledge"]},
        "v2/^webhooks/(?P<pk>[^/]+)/deliveries$": {"pk": objects["webhook"]},
        "v2/^webhooks/(?P<pk>[^/]+)/rotate-secret$": {"pk": objects["webhook"]},
        **{f"v2/^campaigns/(?P<pk>[^/]+){suffix}$": {"pk": objects["campaign"]}
           for suffix in ("", "/start", "/pause", "/resume", "/cancel", "/contacts", "/results.csv")},
        "v2/^blocklist/(?P<pk>[^/]+)$": {"pk": objects["blocked"]},
        "v2/^tools/(?P<pk>[^/]+)$": {"pk": objects["tool"]},
        "v2/^calendars/(?P<pk>[^/]+)$": {"pk": objects["calendar"]},
        "v2/^tools/(?P<pk>[^/]+)/rotate-secret$": {"pk": objects["tool"]},
        "voice/twilio/<str:carrier_id>/incoming": {"carrier_id": TWILIO_CARRIER},
        "voice/twilio/<str:carrier_id>/status": {"carrier_id": TWILIO_CARRIER},
        "voice/asterisk/<str:carrier_id>/calls": {"carrier_id": ASTERISK_CARRIER},
        **{f"voice/asterisk/<str:carrier_id>/calls/<str:call_uuid>/{hook}": {
            "carrier_id": ASTERISK_CARRIER, "call_uuid": "5f0c3d9e-2a41-4c3b-9d8e-0a1b2c3d4e5f"}
           for hook in ("transfer", "whisper", "warm")},
        "voice/twilio/<str:carrier_id>/warm": {"carrier_id": TWILIO_CARRIER},
        "voice/recordings/<str:call_id>.mp3": {"call_id": objects["call"]},
    }


# --- the hostile classes ---------------------------------------------------------------------

# name → JSON text put in place of one field's value
VALUES = {
    "lone surrogate": '"A\\ud800"',
    "NUL": '"a\\u0000b"',
    "huge string": json.dumps("x" * 100_000),
    "control characters": json.dumps("\u0007\u001b[31m\r\n\t\u0085\u0000"[:-1]),
    "RTL marks": json.dumps("\u202eabc\u200f\u2066def\u2069"),
    "absurd integer": "1" + "0" * 400,
    "too many digits": "9" * 5000,
    "huge float": "1e308",
    "out of range": "1e400",
    "negative": "-1",
    "fraction": "0.5",
    "true": "true",
    "null": "null",
    "empty string": '""',
    "empty list": "[]",
    "empty object": "{}",
    "nested": "[[[" + '"x"' + "]]]",
    "deep": "[" * 40 + "]" * 40,
}
# classes whose answer is fixed wherever they appear in a JSON body
EXPECTED = {"lone surrogate": "validation_error", "NUL": "validation_error", "deep": "malformed_json",
            "too many digits": "malformed_json", "out of range": "malformed_json"}

WHOLE_BODIES = {
    "nested 3,000 deep": ("[" * 3000 + "]" * 3000, "malformed_json"),
    # Small enough for the 8 KB of a public lead.
    "objects nested 1,300 deep": ('{"a":' * 1300 + "1" + "}" * 1300, "malformed_json"),
    "null": ("null", None), "list": ("[]", None), "string": ('"x"', None), "number": ("42", None),
    "unterminated": ("{", "malformed_json"), "not UTF-8": (b"\xff\xfe{}", "malformed_json"),
    "NaN": ('{"a": NaN}', "malformed_json"), "lone surrogate key": ('{"\\ud800": 1}', "validation_error"),
    "NUL key": ('{"a\\u0000": 1}', "validation_error"), "empty key": ('{"": 1}', None),
    "3 MB": (json.dumps({"x": "y" * 3_000_000}), None),
}

SUCCESS_TYPES = ("application/json", "audio/mpeg", "text/csv", "application/vnd.oai.openapi",
                 "application/vnd.oai.openapi+json",
                 # the phone webhooks' documented answers: TwiML, an Asterisk call's UUID or transfer target
                 "text/xml", "text/plain")
# Routes that read no input and take long to answer (the OpenAPI document is built per
# request) get fewer query and header variants, not every combination.
LIGHT = {"v2/schema", "v2/docs"}
# The page that renders the OpenAPI document: HTML is its documented success.
HTML_PAGES = {"/v2/docs"}
PATH_VALUES = ["\x00", "a\x00b", "x" * 3000, "\u202eabc", "..", "%", "%ED%A0%80", "1e400", "-1", " ", "ü"]
QUERY_NAMES = ["limit", "status", "kind", "analyze", "capability", "language", "phrase", "format", "cursor", "zzz"]
QUERY_VALUES = ["\x00", "9" * 5000, "\u202e1", "-1", "", "%ED%A0%80"]
HEADERS = {
    "X-Tenant NUL": {"HTTP_X_TENANT": "acme\x00"},
    "X-Tenant huge": {"HTTP_X_TENANT": "a" * 5000},
    "X-Tenant Latin-1": {"HTTP_X_TENANT": "ÿcme"},
    "Authorization NUL": {"HTTP_AUTHORIZATION": "Bearer swk_\x00"},
    "Authorization huge": {"HTTP_AUTHORIZATION": "Bearer " + "k" * 5000},
    "Authorization Latin-1": {"HTTP_AUTHORIZATION": "Bearer swk_ÿÿ_ÿ"},
    "Idempotency-Key NUL": {"HTTP_IDEMPOTENCY_KEY": "k\x00"},
    "Idempotency-Key huge": {"HTTP_IDEMPOTENCY_KEY": "k" * 5000},
    "Origin NUL": {"HTTP_ORIGIN": "https://acme.example\x00"},
    "Origin garbage": {"HTTP_ORIGIN": "javascript:alert(1)"},
    "X-Signature garbage": {"HTTP_X_SIGNATURE": "t=²,v1=é"},
    "Content-Type text": {"CONTENT_TYPE": "text/plain"},
    "Content-Type form": {"CONTENT_TYPE": "application/x-www-form-urlencoded"},
    "Content-Type charset": {"CONTENT_TYPE": "application/json; charset=latin-1"},
}


def _with(template, path, raw):
    """The JSON text of `template` with the value at `path` (a tuple of keys) replaced by `raw`
    (None: the key removed)."""
    body = json.loads(json.dumps(template))
    node = body
    for key in path[:-1]:
        node = node[key]
    if raw is None:
        del node[path[-1]]
        return json.dumps(body)
    node[path[-1]] = HOSTILE
    return json.dumps(body).replace(json.dumps(HOSTILE), raw)


def body_cases(template):
    """(case name, body, expected error code or None) for a JSON template."""
    sites = [(key,) for key in template]
    sites += [(key, inner) for key, value in template.items() if isinstance(value, dict) for inner in value]
    for site in sites:
        where = ".".join(site)
        for name, raw in VALUES.items():
            yield f"{where}: {name}", _with(template, site, raw), EXPECTED.get(name)
        yield f"{where}: missing", _with(template, site, None), None
    text = json.dumps(template)
    if template:  # a route whose body is an empty object (a restore) has no key to repeat
        first = next(iter(template))
        yield "duplicate key", '{"%s": 12, %s' % (first, text[1:]), None
        yield "duplicate key, hostile last", text[:-1] + ', "%s": "\\u0000"}' % first, "validation_error"
    yield "empty key", '{"": "x"' + (", " + text[1:] if template else "}"), None
    yield "unknown key", '{"zzz": "x"' + (", " + text[1:] if template else "}"), None
    for name, (body, expected) in WHOLE_BODIES.items():
        yield name, body, expected


# --- the run ----------------------------------------------------------------------------------

@pytest.fixture
def world(tenant_a, key_a, settings, render_cache_dir, korean_model):
    # Answers are under test, not speed: no recognition runs into its deadline (a 503)
    # while its engine loads on a busy machine.
    settings.STT_DEADLINE_BASE_SEC = settings.STT_DEADLINE_MAX_SEC = 600
    # The one model the tests have stands in for German, the default language.
    settings.VOSK_MODELS = {"ko": korean_model, "de": korean_model}
    tenant_a.minute_cap, tenant_a.lead_rate_limit = 1_000_000, 1_000_000
    tenant_a.save()
    carrier, secret = carrier_create(carrier_id=CARRIER)
    carrier_create(carrier_id=TWILIO_CARRIER, kind="twilio", credentials={"account_sid": "AC" + "0" * 32,
                                                                              "auth_token": TWILIO_TOKEN})
    _, asterisk_secret = carrier_create(carrier_id=ASTERISK_CARRIER, kind="asterisk")
    number_create(tenant=tenant_a, e164=CALLED)
    document = json.loads(SHIPPED_DOCUMENT.read_text(encoding="utf-8"))
    registry_load(document=document, loaded_by="corpus")
    call = Call.objects.create(tenant=tenant_a, carrier=carrier, carrier_call_id="CA-corpus", direction="inbound",
                               from_e164="+491711234567", to_e164="+493055500777", status="active")
    call.started_at = call.created_at
    call.save()
    objects = {
        "assistant": Assistant.objects.create(tenant=tenant_a, name="Empfang").pk,
        "number": number_create(tenant=tenant_a, e164="+493055500888").pk,
        "lead": lead_create(tenant=tenant_a, kind="callback", phone="+491712345678").pk,
        "call": call.pk,
        "lane": document["models"][0]["id"] if "models" in document else "",
        "export": privacy.export_create(tenant=tenant_a, e164="+491712345678", actor="corpus").pk,
        "erasure": privacy.erasure_create(tenant=tenant_a, e164="+491719999999", actor="corpus").pk,
        "webhook": endpoint_create(tenant=tenant_a, url="https://hooks.acme.example/z",
                                   event_types=["lead.created"])[0].pk,
        "campaign": campaign_create(tenant=tenant_a, name="Korpus", purpose="marketing").pk,
        "blocked": blocklist_add(tenant=tenant_a, phone="0176 99988877")[0].pk,
        "tool": http_tool_create(tenant=tenant_a, data={"name": "vorhanden",
                                                        "url": "https://tools.acme.example/v"})[0].pk,
        "knowledge": knowledge_document_create(tenant=tenant_a, title="FAQ", content_type="text/markdown",
                                               text="## Preise\n\nEin Aufmaß kostet 60 Euro.").pk,
        # saved without its connection check (no CalDAV server here); a change is checked and refused
        "calendar": Calendar.objects.create(tenant=tenant_a, name="Praxis", kind="caldav", url=CALENDAR["url"],
                                            settings={"username": "praxis"}).pk,
    }
    assistant = Assistant.objects.get(pk=objects["assistant"])
    objects["scenario"] = scenario_create(assistant=assistant, data=SCENARIO).pk
    objects["run"] = scenario_run_create(assistant=assistant, queued=False).pk
    return {"key": key_a, "secret": secret, "asterisk_secret": asterisk_secret, "objects": objects}


class Runner:
    def __init__(self, world):
        self.world, self.client, self.failures, self.count = world, Client(), [], 0

    def send(self, case, method, path, body=None, *, content_type="application/json", headers=None,
             expected=None):
        headers = dict(headers or {})
        if body is not None and path.startswith("/voice/webhook/"):
            raw = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
            headers.setdefault("HTTP_X_SIGNATURE", signature_header(self.world["secret"], raw))
        auth = {"HTTP_AUTHORIZATION": f"Bearer {self.world['key']}", "HTTP_X_TENANT": "acme"}
        if path.startswith("/voice/twilio/"):
            # A carrier posts its form; the signature covers the URL and the form's fields
            # (a body that is no form is signed as an empty one).
            if content_type == "application/octet-stream":
                content_type = "application/x-www-form-urlencoded"
            try:
                form = dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True)) if isinstance(body, bytes) else {}
            except UnicodeDecodeError:
                form = {}
            headers.setdefault("HTTP_X_TWILIO_SIGNATURE",
                               RequestValidator(TWILIO_TOKEN).compute_signature(f"http://testserver{path}", form))
        elif path.startswith("/voice/asterisk/"):
            auth["HTTP_AUTHORIZATION"] = f"Bearer {self.world['asterisk_secret']}"
        content_type = headers.pop("CONTENT_TYPE", content_type)
        data = b"" if body is None else body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
        response = self.client.generic(method.upper(), path, data, content_type=content_type, **{**auth, **headers})
        self.count += 1
        self.check(case, method, path, response, expected)

    def check(self, case, method, path, response, expected):
        where = f"{method.upper()} {path[:80]!r} [{case}]"
        status = response.status_code
        if status >= 500:
            self.failures.append(f"{where}: {status} {response.content[:200]!r}")
            return
        if status >= 400:
            try:
                error = json.loads(response.content)["error"]
                assert isinstance(error["code"], str) and isinstance(error["message"], str)
                assert isinstance(error["details"], dict)
            except (ValueError, KeyError, TypeError, AssertionError):
                self.failures.append(f"{where}: {status} not the error shape: {response.content[:200]!r}")
                return
            if expected and error["code"] != expected:
                self.failures.append(f"{where}: {error['code']} instead of {expected}")
        elif expected:
            self.failures.append(f"{where}: {status} instead of the error {expected}")
        elif response.get("Content-Type", "").split(";")[0] not in SUCCESS_TYPES and status != 204 and not (
                response.get("Content-Type", "").startswith("text/html") and path.split("?")[0] in HTML_PAGES):
            self.failures.append(f"{where}: {status} with {response.get('Content-Type')!r}")


def _url(route, pattern, values):
    """The concrete path of a route with its parameters filled in (values percent-encoded)."""
    path = "/" + route
    for name, value in values.items():
        encoded = value if value.startswith("%") and len(value) > 1 else quote(value, safe="")
        path = re.sub(rf"<str:{name}>|\(\?P<{name}>[^)]*\)", lambda _, encoded=encoded: encoded, path)
    return path.replace("^", "").replace("$", "")


@pytest.mark.django_db(transaction=False)
@pytest.mark.parametrize("route, pattern, view, actions", ROUTES, ids=[r[0] for r in ROUTES])
def test_hostile_input_never_answers_5xx(world, route, pattern, view, actions):
    runner = Runner(world)
    bodies = templates(world["objects"])
    params = path_values(world["objects"]).get(route, {})
    missing = [name for name in pattern.regex.groupindex if name not in params] + (
        [f"<{name}>" for name in getattr(pattern, "converters", {}) if name not in params])
    assert not missing, f"{route}: add the path parameters {missing} to path_values()"
    url = _url(route, pattern, params)
    for method in actions:
        template = bodies.get((route, method))
        if method in BODY_METHODS:
            assert template is not None, f"{method.upper()} {route}: add a valid body to templates()"
            if isinstance(template, bytes):
                for name, body in {"valid": template, "junk": b"\x00\xff" * 500, "empty": b"",
                                   "JSON": b'{"a": 1}', "deep": b"[" * 3000 + b"]" * 3000}.items():
                    runner.send(name, method, url, body, content_type="application/octet-stream")
            else:
                for case, body, expected in body_cases(template):
                    runner.send(case, method, url, body, expected=expected)
        # A raw upload is spoilt instead: the query and header checks come before decoding,
        # and recognising the same valid audio eighty times tests nothing more.
        body = json.dumps(template) if isinstance(template, dict) else b"\x00\xff" * 50 if template else None
        # Views with a body read no query parameters (but the raw upload's): two names do.
        light = route in LIGHT or (method in BODY_METHODS and not isinstance(template, bytes))
        for name in (QUERY_NAMES[0], QUERY_NAMES[-1]) if light else QUERY_NAMES:
            for value in QUERY_VALUES:
                encoded = value if value.startswith("%") else quote(value, safe="")
                runner.send(f"?{name}={value[:10]!r}", method, f"{url}?{name}={encoded}", body)
        runner.send("repeated parameters", method, f"{url}?limit=1&limit=2&status=new&status=x", body)
        for case, headers in list(HEADERS.items())[:3] if route in LIGHT else HEADERS.items():
            runner.send(case, method, url, body, headers=headers)
        for name in params:
            for value in PATH_VALUES:
                runner.send(f"path {name}={value[:10]!r}", method, _url(route, pattern, {**params, name: value}),
                            body)
    assert not runner.failures, f"{len(runner.failures)} of {runner.count} requests failed:\n" + "\n".join(
        runner.failures[:40])


def test_every_api_route_is_in_the_corpus():
    walked = {route for route, *_ in ROUTES}
    assert {"v2/public/leads", "voice/webhook/<str:carrier_id>", "voice/v1/calls", "api/voice/speak",
            "v2/audio/render", "v2/^numbers$"} <= walked
    assert len(walked) >= 25
