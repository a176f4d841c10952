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
    instructions = models.TextField(
        "Anweisungen", blank=True,
        help_text="Der Systemprompt: wer die Assistenz ist und wie sie spricht (höchstens 20.000 Zeichen).")
    opening_touchpoint = models.CharField(
        "Eröffnungstext", max_length=64, default=DEFAULT_OPENING_TOUCHPOINT,
        help_text="Touchpoint des Skripts, mit dem der Anruf beginnt (der KI-Hinweis wird vorangestellt).")
    tools = models.JSONField(
        "Werkzeuge", default=list, blank=True,
        help_text="Eingebaute Werkzeuge (Namen) und HTTP-Werkzeuge des Mandanten (IDs), die die Assistenz nutzen darf.")
    # None: every knowledge document of the tenant; a list: those documents only.
    knowledge = models.JSONField(
        "Wissensdokumente", null=True, blank=True, default=None,
        help_text="IDs der Wissensdokumente, die die Assistenz nutzen darf; leer: alle Dokumente des Mandanten.")
    model_lane = models.CharField(
        "Modell-Lane", max_length=100, blank=True,
        help_text="ID einer Chat-Lane der Registry; leer: die Wahl des Routers (Kostenregeln wie bei /v1/agent).")
    model_temperature = models.FloatField("Temperatur", null=True, blank=True,
                                          help_text="0 bis 2; leer: der Standard der Lane.")
    model_max_tokens = models.PositiveIntegerField("Höchstzahl Tokens", null=True, blank=True,
                                                   help_text="Längste Antwort in Tokens; leer: der Standard des Gateways.")
    transfer_targets = models.JSONField(
        "Weiterleitungsziele", default=list, blank=True,
        help_text="Die einzigen Nummern, an die die Assistenz Anrufe weiterleiten darf.")
    analysis_summary = models.BooleanField("Zusammenfassung schreiben", default=True)
    analysis_schema = models.JSONField(
        "Schema der Auswertung", null=True, blank=True, default=None,
        help_text="JSON Schema (Draft 2020-12) der strukturierten Angaben, die nach jedem Anruf erhoben werden.")
    analysis_success_criteria = models.TextField(
        "Erfolgskriterien", blank=True, help_text="Wann ein Anruf als erfolgreich gilt.")
    max_duration_sec = models.PositiveIntegerField(
        "Höchstdauer (Sekunden)", null=True, blank=True,
        help_text="Längste Gesprächsdauer; leer: die Höchstdauer des Mandanten.")
    silence_timeout_sec = models.PositiveIntegerField(
        "Schweigen bis zum Auflegen (Sekunden)", null=True, blank=True,
        help_text="Nach so langer Stille beendet die Assistenz den Anruf; leer: der Standard des Agenten.")
    end_call_phrases = models.JSONField(
        "Schlusssätze", default=list, blank=True,
        help_text="Sätze, nach denen die Assistenz das Gespräch beendet (z. B. „Auf Wiederhören“).")
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
