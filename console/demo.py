"""The demo tenant that `make run` shows (CONTRACT §8: `seed_demo`).

Every step is idempotent: running it again changes nothing that is already there.
Each app adds its own demo data in a module `<app>/demo.py` with a function
`seed(tenant)`; those run after the tenant, its assistants and numbers exist, in the
order of INSTALLED_APPS.
"""
import importlib
import importlib.util
import json
import secrets

from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from console.assistants.models import Assistant
from console.credentials.models import ApiKey
from console.credentials.services import api_key_create
from console.numbers.models import PhoneNumber
from console.tenants.models import Membership, Tenant, TenantHost, TenantOrigin
from console.tenants.services import membership_add

DEMO_SLUG = "demo"
OPERATOR_USERNAME = "operator"
# The practice's own login: the demo tenant's owner, who sees the tenant's sections only
# (the operator is the platform's superuser: the registry, every tenant).
OWNER_USERNAME = "praxis"
DEMO_ASSISTANTS = [
    ("Empfang", "Nimmt Anrufe an, nennt Öffnungszeiten und bietet einen Rückruf an."),
    ("Terminvereinbarung", "Vereinbart und verschiebt Termine."),
]
# What the demo's assistants know and may do (docs/api.md, "Assistants").
DEMO_MIND = {
    "Empfang": {
        "instructions": ("Sie sind die freundliche Telefonassistenz der Demo Praxis GmbH. Antworten Sie kurz und "
                         "in ganzen Sätzen. Nehmen Sie Rückrufwünsche auf: fragen Sie nach der Telefonnummer und "
                         "lesen Sie sie zur Bestätigung vor. Verbinden Sie mit dem Praxisteam, wenn der Anrufer "
                         "mit einem Menschen sprechen möchte."),
        "tools": ["create_callback", "lookup_knowledge", "transfer_call", "end_call", "opt_out"],
        "transfer_targets": [{"name": "Praxisteam", "e164": "+4930901829"}],
        "analysis_schema": {"type": "object", "properties": {"reason": {"type": "string"},
                                                             "callback": {"type": "boolean"},
                                                             "phone": {"type": "string"}}},
        "analysis_success_criteria": "Das Anliegen wurde beantwortet oder ein Rückruf vereinbart.",
        "end_call_phrases": ["Auf Wiederhören", "Tschüss"],
    },
    "Terminvereinbarung": {
        "instructions": ("Sie vereinbaren Termine für die Demo Praxis GmbH. Nehmen Sie Terminwünsche als "
                         "Rückrufbitte mit Wunschzeit auf."),
        "tools": ["create_callback", "end_call"],
    },
}
DEMO_NUMBERS = [("+4930901820", "Zentrale", "Empfang"), ("+4940809081", "Termine", "Terminvereinbarung")]


def credentials_file():
    return settings.VAR_DIR / "demo-credentials.json"


def _load_credentials():
    try:
        return json.loads(credentials_file().read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _store_credentials(data):
    path = credentials_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    path.chmod(0o600)


def seed_tenant():
    tenant, _ = Tenant.objects.get_or_create(slug=DEMO_SLUG, defaults={"name": "Demo Praxis GmbH", "minute_cap": 500})
    TenantHost.objects.get_or_create(host="demo.localhost", defaults={"tenant": tenant})
    for origin in ("http://127.0.0.1:8000", "http://localhost:8000"):
        TenantOrigin.objects.get_or_create(tenant=tenant, origin=origin)
    return tenant


def seed_assistants_and_numbers(tenant):
    by_name = {}
    for name, description in DEMO_ASSISTANTS:
        by_name[name], _ = Assistant.objects.get_or_create(
            tenant=tenant, name=name, defaults={"description": description, **DEMO_MIND.get(name, {})}
        )
    for e164, label, assistant in DEMO_NUMBERS:
        PhoneNumber.objects.get_or_create(
            e164=e164, defaults={"tenant": tenant, "label": label, "assistant": by_name[assistant]}
        )


def seed_operator(tenant, stored):
    """A superuser for the admin; its password is made once and kept in var/."""
    User = get_user_model()
    user = User.objects.filter(username=OPERATOR_USERNAME).first()
    if user is None:
        stored["operator_password"] = secrets.token_urlsafe(12)
        user = User.objects.create_superuser(OPERATOR_USERNAME, "operator@demo.localhost", stored["operator_password"])
    Membership.objects.get_or_create(tenant=tenant, user=user, defaults={"role": Membership.Role.OWNER})


def seed_owner(tenant, stored):
    """The demo tenant's owner (staff, no superuser); its password is made once and kept in var/."""
    User = get_user_model()
    user = User.objects.filter(username=OWNER_USERNAME).first()
    if user is None:
        stored["owner_password"] = secrets.token_urlsafe(12)
        user = User.objects.create_user(OWNER_USERNAME, "praxis@demo.localhost", stored["owner_password"],
                                        is_staff=True)
    membership_add(tenant=tenant, user=user, role=Membership.Role.OWNER)


def seed_api_key(tenant, stored):
    """One demo key; only its hash is in the database, so the key itself is kept in
    the untracked var/ file for `make run` to print. If that file is lost, a new key
    replaces the old one."""
    key_id = stored.get("api_key_id")
    if key_id and ApiKey.objects.active().filter(pk=key_id, tenant=tenant).exists():
        return
    api_key, raw_key = api_key_create(tenant=tenant, name="demo (make run)")
    stored.update(api_key_id=api_key.id, api_key=raw_key)


def app_demo_steps():
    steps = []
    for config in apps.get_app_configs():
        if importlib.util.find_spec(f"{config.name}.demo") is not None:
            steps.append(importlib.import_module(f"{config.name}.demo").seed)
    return steps


def seed_demo():
    """Returns the demo credentials: {tenant, api_key, owner_username, owner_password,
    operator_username, operator_password}."""
    stored = _load_credentials()
    with transaction.atomic():
        tenant = seed_tenant()
        seed_assistants_and_numbers(tenant)
        seed_owner(tenant, stored)
        seed_operator(tenant, stored)
        seed_api_key(tenant, stored)
        for step in app_demo_steps():
            step(tenant)
    _store_credentials(stored)
    return {
        "tenant": tenant.slug,
        "api_key": stored.get("api_key"),
        "owner_username": OWNER_USERNAME,
        "owner_password": stored.get("owner_password", "(set before; see var/demo-credentials.json)"),
        "operator_username": OPERATOR_USERNAME,
        "operator_password": stored.get("operator_password", "(set before; see var/demo-credentials.json)"),
    }
