from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError

from console.assistants import references
from console.assistants.models import BUILTIN_TOOLS, Assistant
from console.assistants.validation import assistant_values
from console.errors import ValidationFailed
from console.tenants.admin_scoping import TenantScopedAdmin
from console.tenants.models import Tenant

BUILTIN_LABELS = {
    "create_callback": "Rückruf anlegen (create_callback)",
    "lookup_knowledge": "Im Wissen nachschlagen (lookup_knowledge)",
    "transfer_call": "Anruf weiterleiten (transfer_call)",
    "end_call": "Gespräch beenden (end_call)",
    "opt_out": "Widerspruch aufnehmen (opt_out)",
}
# The API's field of each form field: a problem with `transferTargets[1].e164` shows at
# the transfer targets.
FORM_FIELD_OF = {
    "name": "name", "description": "description", "language": "language", "voice": "voice",
    "instructions": "instructions", "openingTouchpoint": "opening_touchpoint", "tools": "tools",
    "knowledge": "knowledge_ids", "model": "model_lane", "model.lane": "model_lane",
    "model.temperature": "model_temperature", "model.maxTokens": "model_max_tokens",
    "transferTargets": "transfer_targets_text", "analysis": "analysis_schema", "analysis.schema": "analysis_schema",
    "analysis.summary": "analysis_summary", "analysis.successCriteria": "analysis_success_criteria",
    "maxDurationSec": "max_duration_sec", "silenceTimeoutSec": "silence_timeout_sec",
    "endCallPhrases": "end_call_phrases_text",
}


def _lines(text):
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


class AssistantForm(forms.ModelForm):
    """The same fields as the API, checked by the same code (console.assistants.validation);
    lists are edited as lines."""

    tools = forms.MultipleChoiceField(label="Werkzeuge", required=False, widget=forms.CheckboxSelectMultiple,
                                      help_text="Eingebaute Werkzeuge und die HTTP-Werkzeuge des Mandanten.")
    knowledge_all = forms.BooleanField(label="Alle Wissensdokumente", required=False, initial=True,
                                       help_text="Die Assistenz darf alle Wissensdokumente des Mandanten nutzen.")
    knowledge_ids = forms.CharField(
        label="Wissensdokumente (IDs)", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Nur wenn nicht alle: eine Dokument-ID pro Zeile (leer: keine).")
    transfer_targets_text = forms.CharField(
        label="Weiterleitungsziele", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Ein Ziel pro Zeile: „Name: Nummer“, z. B. „Zentrale: 030 901820“. Nur an diese Nummern "
                  "leitet die Assistenz weiter.")
    end_call_phrases_text = forms.CharField(
        label="Schlusssätze", required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Ein Satz pro Zeile, nach dem die Assistenz das Gespräch beendet.")
    analysis_schema = forms.JSONField(
        label="Schema der Auswertung", required=False, widget=forms.Textarea(attrs={"rows": 6}),
        help_text="JSON Schema (Draft 2020-12) mit \"type\": \"object\"; leer: keine strukturierte Auswertung.")

    class Meta:
        model = Assistant
        fields = ["tenant", "name", "description", "language", "voice", "instructions", "opening_touchpoint",
                  "model_lane", "model_temperature", "model_max_tokens", "analysis_summary",
                  "analysis_success_criteria", "max_duration_sec", "silence_timeout_sec"]
        widgets = {"instructions": forms.Textarea(attrs={"rows": 12})}

    def __init__(self, *args, tenants=(), **kwargs):
        super().__init__(*args, **kwargs)
        tenants = list(tenants)
        http_tools = references.reference_choices(references.HTTP_TOOLS, tenants=tenants) or []
        self.fields["tools"].choices = [(name, BUILTIN_LABELS[name]) for name in BUILTIN_TOOLS] + http_tools
        touchpoints = references.reference_choices(references.OPENING_TOUCHPOINT, tenants=tenants)
        if touchpoints:
            self.fields["opening_touchpoint"].widget = forms.Select(choices=touchpoints)
        instance = self.instance if self.instance.pk else None
        if instance is not None:
            self.initial.update(
                tools=list(instance.tools), knowledge_all=instance.knowledge is None,
                knowledge_ids="\n".join(instance.knowledge or []),
                transfer_targets_text="\n".join(f"{t['name']}: {t['e164']}" for t in instance.transfer_targets),
                end_call_phrases_text="\n".join(instance.end_call_phrases), analysis_schema=instance.analysis_schema)

    def _api_data(self):
        data = self.cleaned_data
        targets = []
        for line in _lines(data.get("transfer_targets_text")):
            name, separator, number = line.rpartition(":")
            targets.append({"name": name.strip(), "e164": number.strip()} if separator
                           else {"name": "", "e164": line})
        return {
            "name": data.get("name") or "", "description": data.get("description") or "",
            "language": data.get("language") or "", "voice": data.get("voice") or "",
            "instructions": data.get("instructions") or "",
            "openingTouchpoint": data.get("opening_touchpoint") or "",
            "tools": list(data.get("tools") or []),
            "knowledge": None if data.get("knowledge_all") else _lines(data.get("knowledge_ids")),
            "model": {"lane": data.get("model_lane") or None, "temperature": data.get("model_temperature"),
                      "maxTokens": data.get("model_max_tokens")},
            "transferTargets": targets,
            "analysis": {"summary": bool(data.get("analysis_summary")), "schema": data.get("analysis_schema"),
                         "successCriteria": data.get("analysis_success_criteria") or ""},
            "maxDurationSec": data.get("max_duration_sec"), "silenceTimeoutSec": data.get("silence_timeout_sec"),
            "endCallPhrases": _lines(data.get("end_call_phrases_text")),
        }

    def clean(self):
        cleaned = super().clean()
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        if tenant is None or self.errors:
            return cleaned
        try:
            self.values = assistant_values(tenant=tenant, data=self._api_data(),
                                           instance=self.instance if self.instance.pk else None)
        except ValidationFailed as exc:
            for path, messages in exc.details.items():
                field = FORM_FIELD_OF.get(path) or FORM_FIELD_OF.get(path.split(".")[0].split("[")[0])
                self.add_error(field, ValidationError([f"{path}: {message}" for message in messages]))
        return cleaned

    def save(self, commit=True):
        assistant = super().save(commit=False)
        for name, value in self.values.items():
            setattr(assistant, name, value)
        if commit:
            assistant.save()
        return assistant


@admin.register(Assistant)
class AssistantAdmin(TenantScopedAdmin):
    form = AssistantForm
    list_display = ["name", "tenant", "language", "voice", "id", "created_at"]
    list_filter = ["language"]
    search_fields = ["name", "id", "tenant__slug"]
    readonly_fields = ["id", "created_at", "updated_at"]
    list_select_related = ["tenant"]
    fieldsets = [
        (None, {"fields": ["id", "tenant", "name", "description", "language", "voice"]}),
        ("Gespräch", {"fields": ["instructions", "opening_touchpoint", "end_call_phrases_text",
                                 "max_duration_sec", "silence_timeout_sec"]}),
        ("Werkzeuge und Wissen", {"fields": ["tools", "transfer_targets_text", "knowledge_all", "knowledge_ids"]}),
        ("Modell", {"fields": ["model_lane", "model_temperature", "model_max_tokens"]}),
        ("Auswertung nach dem Anruf", {"fields": ["analysis_summary", "analysis_schema",
                                                  "analysis_success_criteria"]}),
        ("Zeiten", {"fields": ["created_at", "updated_at"]}),
    ]

    # Deleting an assistant that numbers answer with: Django's page names the numbers
    # that stand in the way (their reference is RESTRICT), as for protected objects.

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        tenants = [obj.tenant] if obj is not None else list(Tenant.objects.visible_to(request.user))

        class ScopedForm(form):
            def __init__(self, *args, **inner):
                super().__init__(*args, tenants=tenants, **inner)
        return ScopedForm

    def get_readonly_fields(self, request, obj=None):
        # An assistant stays with its tenant: its numbers and tools are that tenant's.
        return [*self.readonly_fields, "tenant"] if obj is not None else self.readonly_fields
