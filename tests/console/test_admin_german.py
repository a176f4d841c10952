"""The admin is German to the last label, for a tenant's member and for a superuser.

Two checks. The labels as the code declares them (app and model names, every
field's name, help text and choices, list columns, filters, actions, fieldsets):
each must read differently in German than in English, unless it is a word both
languages share (SAME_IN_GERMAN). And every admin page, walked as a German member
of the demo tenant and as a superuser (the index and each app's page, each model's
list with its filters and actions, its add form, the change form of one object, the
console's own pages): no text on it may be one of the English labels, those of our
models (their English names, and each field's name with `_` read as a space, which
is what Django shows for a field without a name) and Django's own.
"""
import re
from html.parser import HTMLParser
from pathlib import Path

import django
import pytest
from django.apps import apps
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.utils import label_for_field
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.test import Client, RequestFactory
from django.urls import resolve
from django.utils import timezone, translation
from django_q.models import OrmQ, Task
from django_q.signing import SignedPackage

from console.audit.services import audit_record
from console.tenants.models import Membership, Tenant
from console.tenants.services import membership_add

pytestmark = pytest.mark.django_db

# Labels that are the same word in German (compared without case).
SAME_IN_GERMAN = {
    "id", "name", "status", "text", "url", "version", "details", "test", "audio", "lead", "leads", "spam", "system",
    "sha-256", "cluster", "hook", "cron", "json", "stimmwerk", "e-mail", "e-mail-adresse", "ok",
    # SMS and the provider's name (messaging_app)
    "sms", "twilio",
    # django-q2's own words that German keeps
    "minuten",
    # names of audio encodings
    "pcm s16le", "μ-law", "a-law",
    # a campaign's purposes and document types, words German uses as they are
    "service", "marketing", "pdf", "markdown",
    # the federal states (a tenant's `state`), named in German already
    "baden-württemberg", "bayern", "berlin", "brandenburg", "bremen", "hamburg", "hessen", "mecklenburg-vorpommern",
    "niedersachsen", "nordrhein-westfalen", "rheinland-pfalz", "saarland", "sachsen", "sachsen-anhalt",
    "schleswig-holstein", "thüringen",
}

OUR_ROOT = Path(settings.BASE_DIR)


def our_apps():
    """Our apps, and django-q2's, whose pages are the admin's job list."""
    return [config for config in apps.get_app_configs()
            if Path(config.path).is_relative_to(OUR_ROOT) and ".venv" not in Path(config.path).parts
            or config.label == "django_q"]


def admin_models():
    return sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def superuser_request():
    request = RequestFactory().get("/admin/")
    request.user = get_user_model()(username="label-reader", is_superuser=True, is_staff=True, is_active=True)
    request.session = {}
    return request


def declared_labels():
    """Every label the code declares, by a key, as text of the active language."""
    labels = {}
    for config in our_apps():
        labels[("app", config.label)] = config.verbose_name
        for model in config.get_models():
            meta = model._meta
            labels[("model", meta.label)] = meta.verbose_name
            labels[("models", meta.label)] = meta.verbose_name_plural
            for field in meta.get_fields():
                if field.auto_created and not field.concrete:
                    continue  # the other side of a relation
                labels[("field", meta.label, field.name)] = field.verbose_name
                if field.help_text:
                    labels[("help", meta.label, field.name)] = field.help_text
                for value, label in field.flatchoices if field.choices else ():
                    # A label that is the stored token (a time zone, a registry status) is no text.
                    if str(label) != str(value).replace("_", " "):
                        labels[("choice", meta.label, field.name, value)] = label
    request = superuser_request()
    for model, model_admin in admin_models():
        label = model._meta.label
        for name in model_admin.get_list_display(request):
            if name not in ("__str__", "action_checkbox") and isinstance(name, str):
                labels[("column", label, name)] = label_for_field(name, model, model_admin)
        for name in model_admin.readonly_fields:
            if isinstance(name, str) and hasattr(model_admin, name):
                labels[("readonly", label, name)] = label_for_field(name, model, model_admin)
        for entry in model_admin.get_list_filter(request):
            if isinstance(entry, type) and hasattr(entry, "title"):
                labels[("filter", label, entry.__name__)] = entry.title
        for name, (_func, _name, description) in model_admin.get_actions(request).items():
            labels[("action", label, name)] = description % {
                "verbose_name": model._meta.verbose_name, "verbose_name_plural": model._meta.verbose_name_plural}
        for index, (title, _options) in enumerate(model_admin.fieldsets or ()):
            if title:
                labels[("fieldset", label, index)] = title
    return {key: str(value) for key, value in labels.items()}


def field_names():
    """Each field's name read as Django shows a field without a name."""
    return {field.name.replace("_", " ") for config in our_apps() for model in config.get_models()
            for field in model._meta.get_fields() if not (field.auto_created and not field.concrete)}


def test_every_declared_label_reads_differently_in_german():
    with translation.override("en"):
        english = declared_labels()
    with translation.override("de"):
        german = declared_labels()
    names = field_names()
    untranslated = sorted(f"{key}: {english[key]!r}" for key, text in german.items()
                          if text.casefold() == english[key].casefold() and text.casefold() not in SAME_IN_GERMAN)
    assert untranslated == [], "\n".join(untranslated)
    nameless = sorted(f"{key}: {text!r}" for key, text in german.items()
                      if text.casefold() in names and text.casefold() not in SAME_IN_GERMAN)
    assert nameless == [], "\n".join(nameless)


def django_english_words():
    """Short texts of Django's admin and auth whose German differs: what Django shows
    where our pages fall back to English."""
    words = set()
    root = Path(django.__file__).parent / "contrib"
    entry = re.compile(r'^msgid "([^"%{}]+)"\nmsgstr "([^"]+)"$', re.M)
    for app in ("admin", "auth"):
        text = (root / app / "locale" / "de" / "LC_MESSAGES" / "django.po").read_text()
        for msgid, msgstr in entry.findall(text):
            if len(msgid.split()) <= 3 and msgid.casefold() != msgstr.casefold():
                words.add(msgid.casefold())
    return words


def english_words():
    with translation.override("en"):
        labels = declared_labels()
    words = {text.casefold() for text in labels.values()} | field_names() | django_english_words()
    return words - SAME_IN_GERMAN


class VisibleTexts(HTMLParser):
    """The texts a reader sees: text nodes outside scripts, styles and code, and the
    captions of buttons; each with whether it stands where the admin puts its own
    words (headings, labels, help, buttons, messages), not the data it shows."""

    SKIP = {"script", "style", "textarea", "pre", "code"}
    VOID = {"input", "br", "img", "meta", "link", "hr", "source", "col", "area", "base", "wbr"}
    WORDING_TAGS = {"h1", "h2", "h3", "label", "legend", "caption", "button", "summary", "title", "th", "p"}
    WORDING_CLASSES = {"help", "breadcrumbs", "messagelist", "object-tools", "errornote", "errorlist", "submit-row"}
    DATA_CLASSES = {"readonly", "results", "transcript", "findings", "field-value"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.texts = [], []

    def _wording(self, tag_classes):
        tags = {tag for tag, _classes in tag_classes}
        classes = set().union(*(classes for _tag, classes in tag_classes)) if tag_classes else set()
        if classes & self.DATA_CLASSES or "td" in tags:
            return False
        return bool(tags & self.WORDING_TAGS or classes & self.WORDING_CLASSES)

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "input" and values.get("type") in ("submit", "button") and values.get("value"):
            self.texts.append((values["value"], True))
        if tag not in self.VOID:
            self.stack.append((tag, set((values.get("class") or "").split())))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if any(open_tag == tag for open_tag, _classes in self.stack):
            while self.stack.pop()[0] != tag:
                pass

    def handle_data(self, data):
        if not self.SKIP.intersection(tag for tag, _classes in self.stack):
            text = " ".join(data.split())
            if text:
                self.texts.append((text, self._wording(self.stack)))


# Words of English sentences that German wording never uses.
ENGLISH_WORDS = re.compile(r"\b(the|and|of|is|are|were|has|have|with|without|this|that|selected|successfully|"
                           r"from|for|per|not|yes|until|or|to|at|by|on|only|your|you)\b", re.I)


def english_on(page, words):
    parser = VisibleTexts()
    parser.feed(page)
    found = []
    for text, wording in parser.texts:
        plain = text.strip(" :*›»").casefold()
        if any(candidate in words for candidate in (plain, plain.removeprefix("nach "), plain.removeprefix("by "))):
            found.append(text)
        elif wording and ENGLISH_WORDS.search(text):
            found.append(text)
    return found


@pytest.fixture
def demo(django_user_model):
    """The demo data of `make run`, and one row of each model it leaves empty."""
    call_command("seed_demo", stdout=open("/dev/null", "w"))
    from gateway_app.models import LaneUsage
    from leads_app.models import Lead
    from leads_app.services import lead_set_status
    from messaging_app.models import Sms
    from messaging_app.services import messaging_settings_update
    from privacy_app import services as privacy
    from privacy_app.models import RetentionSettings
    from registry_app.models import LaneCooldown, LaneError, LaneHealth
    from tools_app.services import http_tool_create
    from webhooks_app.models import Attempt, Delivery
    from webhooks_app.services import endpoint_create

    tenant = Tenant.objects.get(slug="demo")
    now = timezone.now()
    endpoint_create(tenant=tenant, url="https://crm.example/hooks", event_types=["lead.updated"])
    lead = Lead.objects.for_tenant(tenant).filter(status="new").first()
    lead_set_status(lead=lead, status="contacted")
    delivery = Delivery.objects.get()
    Attempt.objects.create(tenant=tenant, delivery=delivery, number=1, outcome="failed", started_at=now,
                           duration_ms=120, response_status=500, error="HTTP 500")
    RetentionSettings.objects.get_or_create(tenant=tenant)
    http_tool_create(tenant=tenant, data={"name": "termin_pruefen", "description": "Prüft, ob ein Termin frei ist.",
                                          "url": "https://praxis.example/termine"})
    messaging_settings_update(tenant=tenant, data={"provider": "webhook", "webhook_url": "https://praxis.example/sms"})
    Sms.objects.create(tenant=tenant, key="demo-sms", to_e164="+4917612345678", template="confirmation",
                       text="Praxis: Ihr Termin ist bestätigt.", send_at=now)
    privacy.export_create(tenant=tenant, e164="+4917612345678", actor="user:operator")
    from calendars_app.models import Appointment, Calendar

    calendar = Calendar.objects.create(tenant=tenant, name="Praxiskalender", kind="caldav",
                                       url="https://cloud.praxis.example/dav/termine/", settings={"username": "praxis"})
    Appointment.objects.create(tenant=tenant, calendar=calendar, assistant_id="as_demo", type_name="Erstgespräch",
                               starts_at=now, ends_at=now, caller_e164="+4917612345678", caller_name="Lehmann")
    privacy.erasure_create(tenant=tenant, e164="+4915112345670", actor="user:operator")
    LaneUsage.objects.create(day=now.date(), lane_id="demo-lane", capability="tts", mode="mock", requests=3)
    LaneHealth.objects.create(lane_id="demo-lane", target="http://127.0.0.1/health", ok=False, detail="refused",
                              checked_at=now, consecutive_failures=2)
    LaneCooldown.objects.create(lane_id="demo-lane", until=now, reason="HTTP 503")
    LaneError.objects.create(lane_id="demo-lane", outcome="rejected", detail="HTTP 401", failed_at=now)
    Task.objects.create(id="a" * 32, name="demo-done", func="math.floor", started=now, stopped=now, success=True)
    Task.objects.create(id="b" * 32, name="demo-failed", func="math.floor", started=now, stopped=now,
                        success=False, result="boom")
    OrmQ.objects.create(key="stimmwerk", lock=now, payload=SignedPackage.dumps(
        {"id": "c" * 32, "name": "demo-queued", "group": "demo", "func": "math.floor", "args": (1.5,), "kwargs": {}}))
    audit_record(actor="user:operator", action="admin.change leads_app.lead", tenant=tenant, object_id=lead.pk)
    from agent_app.models import Scenario, ScenarioRun
    from console.assistants.models import Assistant
    assistant = Assistant.objects.for_tenant(tenant).first()
    scenario = Scenario.objects.create(tenant=tenant, assistant=assistant, name="Rückruf",
                                       turns=[{"text": "Bitte rufen Sie mich zurück.", "expectations": []}])
    ScenarioRun.objects.create(tenant=tenant, assistant=assistant, status="failed", finished_at=now, results=[{
        "scenario": scenario.pk, "name": scenario.name, "passed": False, "reason": "Die Assistenz hat „zurück“ nicht "
        "gesagt.", "expectations": [], "transcript": [{"role": "user", "text": "Bitte rufen Sie mich zurück."}]}])
    owner = django_user_model.objects.create_user("inhaberin", "inhaberin@demo.localhost", "pw", is_staff=True)
    membership_add(tenant=tenant, user=owner, role=Membership.Role.OWNER)
    staff = django_user_model.objects.create_user("mitarbeiter", "mitarbeiter@demo.localhost", "pw", is_staff=True)
    membership_add(tenant=tenant, user=staff, role=Membership.Role.MEMBER)
    # A fixed salt: the user page shows the hash's first characters ("salt: is****"
    # from a random salt would read as the English word "is").
    for user in (owner, staff, django_user_model.objects.get(username="operator")):
        user.password = make_password("pw", salt="xqzkwvjrtplmnbcd")
        user.save(update_fields=["password"])
    return {"superuser": django_user_model.objects.get(username="operator"), "owner": owner, "staff": staff,
            "tenant": tenant}


def pages_of(client, model, model_admin):
    meta = model._meta
    base = f"/admin/{meta.app_label}/{meta.model_name}/"
    yield base
    request = client.request_for_permissions
    if model_admin.has_add_permission(request):
        yield base + "add/"
    request.resolver_match = resolve(base)
    obj = model_admin.get_queryset(request).order_by().first()
    if obj is not None:
        yield f"{base}{obj.pk}/change/"


def german_client(user):
    client = Client(HTTP_ACCEPT_LANGUAGE="de")
    client.force_login(user)
    request = RequestFactory().get("/admin/")
    request.user = user
    client.request_for_permissions = request
    return client


@pytest.mark.parametrize("who", ["owner", "staff", "superuser"])
def test_every_admin_page_is_german(demo, who):
    user = demo[who]
    client = german_client(user)
    words = english_words()
    urls = ["/admin/", "/admin/scripts_app/scriptoverride/effective/", "/admin/password_change/"]
    urls += [app["app_url"] for app in admin.site.get_app_list(client.request_for_permissions)]
    empty = []
    for model, model_admin in admin_models():
        if not model_admin.has_view_permission(client.request_for_permissions):
            continue
        found = list(pages_of(client, model, model_admin))
        if not any(url.endswith("/change/") for url in found):
            empty.append(model._meta.label)
        urls += found
    assert empty == [], f"no object to open as {who}: add one to the `demo` fixture"
    offences = []
    walked = 0
    for url in urls:
        response = client.get(url)
        if response.status_code == 403:
            continue  # a page this user may not open (e.g. a member and an app of platform models)
        assert response.status_code == 200, url
        assert response.headers["Content-Language"] == "de"
        walked += 1
        offences += [f"{url}: {text!r}" for text in english_on(response.content.decode(), words)]
    if who == "owner":  # the page that shows a new API key once
        response = client.post("/admin/credentials/apikey/add/", {"tenant": demo["tenant"].pk, "name": "CRM"})
        assert response.status_code == 200 and 'id="raw-key"' in response.content.decode()
        offences += [f"API key created: {text!r}" for text in english_on(response.content.decode(), words)]
    assert walked > 25
    assert offences == [], "\n".join(offences)


ENGLISH_MESSAGE_WORDS = re.compile(r"\b(the|and|of|is|are|were|has|selected|successfully|revoked|marked|"
                                   r"key|keys|from now on|refused)\b", re.I)


def test_the_admins_actions_answer_in_german(demo):
    """Each action of our admins (Django's delete asks first, in German), run on one
    object: its label and its message are German."""
    user = demo["superuser"]
    client = german_client(user)
    request = client.request_for_permissions
    ran = 0
    for model, model_admin in admin_models():
        if model.__module__.startswith("django"):
            continue
        for name, (_func, _name, description) in model_admin.get_actions(request).items():
            if name == "delete_selected":
                continue
            obj = model_admin.get_queryset(request).order_by().first()
            assert obj is not None, model._meta.label
            meta = model._meta
            response = client.post(f"/admin/{meta.app_label}/{meta.model_name}/",
                                   {"action": name, "_selected_action": [obj.pk]}, follow=True)
            assert response.status_code == 200
            shown = [str(message) for message in get_messages(response.wsgi_request)] or [
                str(message) for message in response.context["messages"]]
            assert shown, (model._meta.label, name)
            for text in [str(description), *shown]:
                assert not ENGLISH_MESSAGE_WORDS.search(text), (model._meta.label, name, text)
            ran += 1
    assert ran >= 7  # six lead statuses and the API keys' revocation


def test_what_a_practice_meets_in_its_first_hour_is_german(demo, settings):
    """Beyond the labels: form errors (the HTTP tool form, empty and invalid), transcript
    notes, carrier names, an erasure's receipt and every page `make run` prints a link to."""
    from agent_app.session import INTERRUPTED
    from calls_app.carriers import SimCarrierAdapter
    from privacy_app.models import Erasure

    words = english_words()
    client = german_client(demo["owner"])
    errors = []
    for body in ({"tenant": demo["tenant"].pk},
                 {"tenant": demo["tenant"].pk, "name": "Kein gültiger Name!", "url": "https://beispiel.de/werkzeug",
                  "parameters": '{"type": "object", "properties": {}}', "timeout_ms": "3000"},
                 {"tenant": demo["tenant"].pk, "name": "neues_werkzeug", "url": "http://beispiel.de/werkzeug",
                  "parameters": '{"type": "object", "properties": {}}', "timeout_ms": "3000"},
                 {"tenant": demo["tenant"].pk, "name": "termin_pruefen", "url": "https://praxis.example/termine",
                  "parameters": '{"type": "object", "properties": {}}', "timeout_ms": "3000"}):
        page = client.post("/admin/tools_app/httptool/add/", body).content.decode()
        shown = re.findall(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', page, re.S)
        assert shown, body
        errors += [re.sub(r"<[^>]+>", " ", item).strip() for item in shown]
    assert any("https" in error for error in errors) and any("Kleinbuchstaben" in error for error in errors), errors
    assert [error for error in errors if ENGLISH_WORDS.search(error)] == []
    # What the transcript and the carrier list show.
    for text in (INTERRUPTED, SimCarrierAdapter.name):
        assert not ENGLISH_WORDS.search(text), text
    # An erasure's receipt: what was removed, in words.
    receipt = client.get(f"/admin/privacy_app/erasure/{Erasure.objects.get().pk}/change/").content.decode()
    assert "transcriptLines" not in receipt and english_on(receipt, words) == []
    # The pages `make run` prints: the root (to the admin's login) and the voice demo.
    settings.AGENT_VOICE_DEMO = True
    anonymous = Client(HTTP_ACCEPT_LANGUAGE="de")
    login = anonymous.get("/", follow=True)
    assert login.redirect_chain[-1][0].startswith("/admin/login/") and login.status_code == 200
    for page in (login, anonymous.get("/widget/voice-demo")):
        assert page.status_code == 200
        assert english_on(page.content.decode(), words) == []
        assert not re.search(r"\bCalls\b", page.content.decode())
