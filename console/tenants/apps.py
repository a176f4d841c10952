from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TenantsConfig(AppConfig):
    name = "console.tenants"
    label = "tenants"
    verbose_name = _("Tenants")

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from console.tenants.models import Membership
        from console.tenants.roles import membership_changed

        # Every way a membership is written (services, the admin and its inlines,
        # commands) grants the role's operator group; removing it takes the group away.
        post_save.connect(membership_changed, sender=Membership, dispatch_uid="membership_role_groups")
        post_delete.connect(membership_changed, sender=Membership, dispatch_uid="membership_role_groups_delete")
