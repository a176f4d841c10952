from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from console.ids import ID_LENGTH, PrefixedId
from console.tenants.querysets import TenantOwnedQuerySet

DEFAULT_OPENING_TOUCHPOINT = "inbound.greeting"
# How an assistant converses: hear → think → speak with our engines and lanes, or speech
# to speech through a voice-agent lane (its `realtime`; agent_app/realtime.py).
PIPELINE, REALTIME = "pipeline", "realtime"
MODES = (PIPELINE, REALTIME)


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
    mode = models.CharField(
        _("conversation mode"), max_length=16, default=PIPELINE,
        choices=[(PIPELINE, _("Pipeline (recognition, language model, voice)")),
                 (REALTIME, _("Realtime (speech to speech)"))],
        help_text=_("Realtime: a voice-agent lane hears, thinks and speaks; the AI notice is still spoken first."))
    # {"lane": a voice-agent lane of the registry (protocol openai-realtime)}; {}: none.
    realtime = models.JSONField(
        _("realtime lane"), default=dict, blank=True,
        help_text=_("The voice-agent lane of the realtime mode."))
    instructions = models.TextField(
        _("instructions"), blank=True,
        help_text=_("The system prompt: who the assistant is and how it speaks (at most 20,000 characters)."))
    opening_touchpoint = models.CharField(
        _("opening text"), max_length=64, default=DEFAULT_OPENING_TOUCHPOINT,
        help_text=_("The script's touchpoint the call begins with (the AI notice is put before it)."))
    # The assistant's own first words after the AI disclosure; empty: the opening
    # touchpoint's script (agent_app.conversation.opening_script).
    greeting = models.TextField(
        _("greeting"), blank=True,
        help_text=_("What the caller hears first, right after the AI notice; {{companyName}} is the company's "
                    "name. Empty: the opening text's script."))
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
    # Not a field: which published version this instance is (console.assistants.selectors
    # .assistant_as_of); None for the draft (the row itself).
    version: int | None = None
    # What a version recorded beside the fields (console.assistants.references
    # .snapshot_parts: its HTTP tools' definitions); None: the draft, everything live.
    snapshot_parts: dict[str, Any] | None = None

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


class AssistantVersion(models.Model):
    """A published version of an assistant: an immutable snapshot of its behaviour
    (console.assistants.versions.assistant_snapshot: every field of the assistant but
    its identity and timestamps) that phone numbers, campaigns and the web widget
    answer with. `number` counts 1, 2, … per assistant (shown as v1, v2, …)."""

    id = models.CharField(primary_key=True, max_length=ID_LENGTH, default=PrefixedId("av"), editable=False)
    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="assistant_versions",
                               verbose_name=_("tenant"))
    assistant = models.ForeignKey(Assistant, on_delete=models.CASCADE, related_name="versions",
                                  verbose_name=_("assistant"))
    number = models.PositiveIntegerField(_("version"), editable=False)
    snapshot = models.JSONField(_("snapshot"), editable=False)
    note = models.CharField(_("note"), max_length=500, blank=True, editable=False)
    # Who published it: `key:<prefix>` (an API key), `user:<name>` (the admin) or
    # `migration` (the v1 every assistant got when versions came).
    published_by = models.CharField(_("published by"), max_length=160, editable=False)
    created_at = models.DateTimeField(_("published"), auto_now_add=True)

    objects = TenantOwnedQuerySet.as_manager()

    class Meta:
        ordering = ["assistant", "-number"]
        constraints = [models.UniqueConstraint(fields=["assistant", "number"], name="assistant_version_number")]
        verbose_name = _("assistant version")
        verbose_name_plural = _("assistant versions")

    def __str__(self) -> str:
        return f"v{self.number}"
