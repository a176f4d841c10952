"""Operator groups that a membership's role grants, so that a member sees the console
at once (docs/operations.md, "Roles"). Which rows a member sees is the scoping's
business (admin_scoping.py); these groups only decide which pages and actions.

Written against an `apps` registry so the data migration can use it with its
historical models as well as the running code.
"""
from django.apps import apps as django_apps

OWNER_GROUP = "Mandant: Inhaber"
MEMBER_GROUP = "Mandant: Mitarbeiter"

_ALL = ("view", "add", "change", "delete")

MEMBER_PERMISSIONS = {
    "tenants.tenant": ("view",),
    "tenants.membership": ("view",),
    "auth.user": ("view",),
    "assistants.assistant": ("view",),
    "numbers.phonenumber": ("view",),
    "scripts_app.scriptoverride": ("view", "add", "change"),
    "leads_app.lead": ("view", "change"),
    "calls_app.call": ("view",),
    "calls_app.usagecounter": ("view",),
    "campaigns_app.campaign": ("view", "change"),
    "campaigns_app.campaigncontact": ("view",),
    "campaigns_app.blockednumber": ("view", "add"),
    "tools_app.httptool": ("view",),
    "knowledge_app.knowledgedocument": ("view", "add"),
    "knowledge_app.knowledgesynonym": ("view",),
    "messaging_app.sms": ("view",),
    "agent_app.scenario": ("view",),
    "agent_app.scenariorun": ("view",),
}

OWNER_PERMISSIONS = {
    **MEMBER_PERMISSIONS,
    "tenants.tenant": ("view", "change"),
    "tenants.membership": _ALL,
    "credentials.apikey": _ALL,  # deleting only keys never used (credentials/admin.py)
    "assistants.assistant": _ALL,
    "numbers.phonenumber": _ALL,
    "scripts_app.scriptoverride": _ALL,
    "tools_app.httptool": _ALL,
    "privacy_app.retentionsettings": ("view", "add", "change"),
    "privacy_app.erasure": ("view", "add"),
    "privacy_app.export": ("view", "add"),
    "audit.auditentry": ("view",),
    "campaigns_app.campaign": _ALL,
    "campaigns_app.blockednumber": _ALL,
    "knowledge_app.knowledgedocument": ("view", "add", "delete"),  # documents are replaced, not edited
    "knowledge_app.knowledgesynonym": _ALL,
    "messaging_app.messagingsettings": ("view", "add", "change"),
    "agent_app.scenario": _ALL,  # test cases: written and run by the owner
    "agent_app.scenariorun": ("view", "delete"),
}

ROLE_GROUPS = {"owner": (OWNER_GROUP, OWNER_PERMISSIONS), "member": (MEMBER_GROUP, MEMBER_PERMISSIONS)}


def ensure_role_groups(apps=django_apps):
    """Creates the groups and gives each exactly its permissions; returns them by role.
    Permissions of models that do not exist (yet) are left out."""
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    groups = {}
    for role, (name, wanted) in ROLE_GROUPS.items():
        group, _ = Group.objects.get_or_create(name=name)
        codenames = [(model.split(".")[0], f"{action}_{model.split('.')[1]}")
                     for model, actions in wanted.items() for action in actions]
        permissions = [p for p in Permission.objects.filter(codename__in=[c for _, c in codenames])
                       .select_related("content_type")
                       if (p.content_type.app_label, p.codename) in codenames]
        group.permissions.set(permissions)
        groups[role] = group
    return groups


def user_role_groups_sync(*, user):
    """The user's operator groups are exactly those of the roles of their memberships
    (other groups, given by a superuser, stay)."""
    from console.tenants.models import Membership

    Group = django_apps.get_model("auth", "Group")
    names = {role: name for role, (name, _) in ROLE_GROUPS.items()}
    if not Group.objects.filter(name__in=names.values()).count() == len(names):
        ensure_role_groups()  # e.g. after a test database was flushed
    roles = set(Membership.objects.filter(user=user).values_list("role", flat=True))
    user.groups.remove(*Group.objects.filter(name__in=[names[r] for r in names if r not in roles]))
    user.groups.add(*Group.objects.filter(name__in=[names[r] for r in roles if r in names]))


def membership_changed(sender, instance, raw=False, **kwargs):
    """Signal receiver: a membership was saved or deleted (not when loading fixtures)."""
    if not raw:
        user_role_groups_sync(user=instance.user)
