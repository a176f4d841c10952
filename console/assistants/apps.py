from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AssistantsConfig(AppConfig):
    name = "console.assistants"
    label = "assistants"
    verbose_name = _("Assistants")

    def ready(self):
        from console.assistants.models import Assistant, AssistantVersion
        from console.quotas import register_usage

        register_usage("assistants", lambda tenant: Assistant.objects.for_tenant(tenant).count())
        register_usage("versions", lambda tenant: AssistantVersion.objects.filter(tenant=tenant).count())
