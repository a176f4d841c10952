from django.db import models
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet

# The tools every assistant may be given by name (docs/api.md, "Assistants"); the
# tenant's own HTTP tools (tools_app) are named by their ids. What each one does, and
# its definition for the model, is tools_app's (tools_app/definitions.py).
BUILTIN_TOOLS = ("create_callback", "lookup_knowledge", "transfer_call", "end_call", "opt_out")
DEFAULT_OPENING_TOUCHPOINT = "inbound.greeting"


class Assistant(models.Model):
    """A configured voice assistant of a tenant (what answers a phone number): who it
    is (instructions), how it opens the call, what it may do (tools, transfer targets),
    what it may know (knowledge), which lane thinks for it, and what is written down
    after each call (analysis). Validated by console.assistants.validation, whoever
    writes it (API or admin)."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("as"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="assistants",
                               verbose_name=_("tenant"))
    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    language = models.CharField(_("language"), max_length=8, default="de",
                                help_text=_("BCP 47 language of the conversation."))
    voice = models.CharField(_("voice"), max_length=64, blank=True,
                             help_text=_("TTS voice; empty for the engine's default."))
    # {"lane": an stt lane of the registry that streams, "keyterms": [terms]}; {}: the local recogniser.
    transcriber = models.JSONField(
        _("transcriber"), default=dict, blank=True,
        help_text=_("Streaming speech recognition lane and its key terms; empty: this service's recognition."))
    instructions = models.TextField(
        _("instructions"), blank=True,
        help_text=_("The system prompt: who the assistant is and how it speaks (at most 20,000 characters)."))
    opening_touchpoint = models.CharField(
        _("opening text"), max_length=64, default=DEFAULT_OPENING_TOUCHPOINT,
        help_text=_("The script's touchpoint the call begins with (the AI notice is put before it)."))
    tools = models.JSONField(
        _("tools"), default=list, blank=True,
        help_text=_("Built-in tools (names) and the tenant's HTTP tools (ids) the assistant may use."))
    # None: every knowledge document of the tenant; a list: those documents only.
    knowledge = models.JSONField(
        _("knowledge documents"), null=True, blank=True, default=None,
        help_text=_("Ids of the knowledge documents the assistant may use; empty: all of the tenant's documents."))
    model_lane = models.CharField(
        _("model lane"), max_length=100, blank=True,
        help_text=_("Id of a chat lane of the registry; empty: the router's choice (cost rules as for /v1/agent)."))
    model_temperature = models.FloatField(_("temperature"), null=True, blank=True,
                                          help_text=_("0 to 2; empty: the lane's default."))
    model_max_tokens = models.PositiveIntegerField(_("maximum tokens"), null=True, blank=True,
                                                   help_text=_("Longest answer in tokens; empty: the gateway's default."))
    transfer_targets = models.JSONField(
        _("transfer targets"), default=list, blank=True,
        help_text=_("The only numbers the assistant may transfer calls to."))
    analysis_summary = models.BooleanField(_("write a summary"), default=True)
    analysis_schema = models.JSONField(
        _("analysis schema"), null=True, blank=True, default=None,
        help_text=_("JSON Schema (Draft 2020-12) of the structured data gathered after each call."))
    analysis_success_criteria = models.TextField(
        _("success criteria"), blank=True, help_text=_("When a call counts as successful."))
    max_duration_sec = models.PositiveIntegerField(
        _("maximum duration (seconds)"), null=True, blank=True,
        help_text=_("Longest conversation; empty: the tenant's maximum."))
    silence_timeout_sec = models.PositiveIntegerField(
        _("silence before hanging up (seconds)"), null=True, blank=True,
        help_text=_("After this much silence the assistant ends the call; empty: the agent's default."))
    end_call_phrases = models.JSONField(
        _("closing phrases"), default=list, blank=True,
        help_text=_("Phrases after which the assistant ends the conversation (e.g. “Goodbye”)."))
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("last changed"), auto_now=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["tenant", "name"])]
        verbose_name = _("assistant")
        verbose_name_plural = _("assistants")

    def __str__(self):
        return self.name

    @property
    def knowledge_all(self):
        return self.knowledge is None

    def transfer_target_for(self, e164):
        """The transfer target with this E.164 number, or None."""
        return next((target for target in self.transfer_targets if target.get("e164") == e164), None)
