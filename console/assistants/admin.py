from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.formats import localize
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import capfirst
from django.utils.timezone import localtime
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from console.assistants import references, services
from console.assistants.builtin_tools import builtin_tools
from console.assistants.history import version_history
from console.assistants.models import Assistant
from console.assistants.validation import assistant_values
from console.audit.services import actor_of, audit_record, request_id_of
from console.errors import ApiError, ValidationFailed
from console.tenants.admin_scoping import TenantScopedAdmin
from console.tenants.models import Tenant

# The admin's banner where an assistant is answered by the offline rules (no language model).
OFFLINE_BANNER = _(
    "Offline rule set: your instructions take effect only with a language model. Until then the assistant "
    "answers by fixed rules: it greets with the disclosure, gives opening hours and answers from the knowledge "
    "documents, takes callback requests with the number, books, moves and cancels appointments in your "
    "calendar (with appointment types), transfers to your team, notes objections and says goodbye; it does not follow your instructions or answer freely. Choose a chat lane under “Model” (or load "
    "a registry with a language model).")

# A transfer target's line in the admin ends so for a warm hand-over.
WARM = " (warm)"
# The API's field of each form field: a problem with `transferTargets[1].e164` shows at
# the transfer targets.
FORM_FIELD_OF = {
    "name": "name", "description": "description", "language": "language", "voice": "voice",
    "transcriber": "transcriber_lane", "transcriber.lane": "transcriber_lane",
    "transcriber.keyterms": "transcriber_keyterms_text", "mode": "mode", "realtime": "realtime_lane",
    "realtime.lane": "realtime_lane",
    "instructions": "instructions", "openingTouchpoint": "opening_touchpoint", "greeting": "greeting",
    "tools": "tools",
    "knowledge": "knowledge_ids", "model": "model_lane", "model.lane": "model_lane",
    "model.temperature": "model_temperature", "model.maxTokens": "model_max_tokens",
    "transferTargets": "transfer_targets_text", "analysis": "analysis_schema", "analysis.schema": "analysis_schema",
    "analysis.summary": "analysis_summary", "analysis.successCriteria": "analysis_success_criteria",
    "maxDurationSec": "max_duration_sec", "silenceTimeoutSec": "silence_timeout_sec",
    "endCallPhrases": "end_call_phrases_text", "appointmentTypes": "appointment_types_json",
}


def _lines(text):
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


class AssistantForm(forms.ModelForm):
    """The same fields as the API, checked by the same code (console.assistants.validation);
    lists are edited as lines."""

    tools = forms.MultipleChoiceField(label=capfirst(_("tools")), required=False,
                                      widget=forms.CheckboxSelectMultiple,
                                      help_text=_("Built-in tools and the tenant's HTTP tools."))
    knowledge_all = forms.BooleanField(label=_("All knowledge documents"), required=False, initial=True,
                                       help_text=_("The assistant may use all of the tenant's knowledge documents."))
    knowledge_ids = forms.CharField(
        label=_("Knowledge documents (ids)"), required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("Only if not all: one document id per line (empty: none)."))
    transcriber_lane = forms.CharField(
        label=_("Speech recognition lane"), required=False, max_length=100,
        help_text=_("A streaming speech recognition lane of the registry (e.g. stt-deepgram); empty: this "
                    "service's recognition."))
    transcriber_keyterms_text = forms.CharField(
        label=_("Key terms"), required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("One name or term per line that the speech recognition should expect."))
    realtime_lane = forms.CharField(
        label=_("Realtime lane"), required=False, max_length=100,
        help_text=_("The voice-agent lane of the realtime mode (e.g. voice-agent-realtime); empty: none."))
    transfer_targets_text = forms.CharField(
        label=capfirst(_("transfer targets")), required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("One target per line: “Name: number”, e.g. “Reception: 030 901820”. The assistant "
                    "transfers to these numbers only. “(warm)” after the number: the person is rung first and "
                    "hears a short summary before the caller is joined."))
    end_call_phrases_text = forms.CharField(
        label=capfirst(_("closing phrases")), required=False, widget=forms.Textarea(attrs={"rows": 3}),
        help_text=_("One phrase per line after which the assistant ends the conversation."))
    appointment_types_json = forms.JSONField(
        label=capfirst(_("appointment types")), required=False, initial=list,
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text=_('What callers may book, as a JSON list: [{"name": "Erstgespräch", "durationMinutes": 30, '
                    '"calendar": "cal_…", "hours": {"mon": [{"start": "09:00", "end": "12:00"}]}}].'))
    analysis_schema = forms.JSONField(
        label=capfirst(_("analysis schema")), required=False, widget=forms.Textarea(attrs={"rows": 6}),
        help_text=_('JSON Schema (Draft 2020-12) with "type": "object"; empty: no structured analysis.'))

    class Meta:
        model = Assistant
        fields = ["tenant", "name", "description", "language", "voice", "mode", "instructions", "greeting",
                  "opening_touchpoint", "model_lane", "model_temperature", "model_max_tokens", "analysis_summary",
                  "analysis_success_criteria", "max_duration_sec", "silence_timeout_sec"]
        widgets = {"instructions": forms.Textarea(attrs={"rows": 12}), "greeting": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args, tenants=(), **kwargs):
        super().__init__(*args, **kwargs)
        tenants = list(tenants)
        http_tools = references.reference_choices(references.HTTP_TOOLS, tenants=tenants) or []
        self.fields["tools"].choices = [(tool.name, tool.label) for tool in builtin_tools()] + http_tools
        # The registry's callable lanes (and voices) as dropdowns, not free-text ids; a
        # value saved before stays choosable (its check still runs on save).
        instance = self.instance if self.instance.pk else None
        for field, reference, current in (
                ("model_lane", references.MODEL_LANE, instance.model_lane if instance else ""),
                ("voice", references.VOICE_LANE, instance.voice if instance else ""),
                ("transcriber_lane", references.TRANSCRIBER_LANE,
                 (instance.transcriber or {}).get("lane", "") if instance else "")):
            choices = references.reference_choices(reference, tenants=tenants)
            if choices and field in self.fields:  # not when the user may only view
                if current and current not in dict(choices):
                    choices.append((current, current))
                self.fields[field].widget = forms.Select(choices=choices)
        if "mode" in self.fields:  # not sent: the pipeline, as through the API
            self.fields["mode"].required = False
        touchpoints = references.reference_choices(references.OPENING_TOUCHPOINT, tenants=tenants)
        if touchpoints and "opening_touchpoint" in self.fields:  # not when the user may only view
            self.fields["opening_touchpoint"].widget = forms.Select(choices=touchpoints)
        if instance is not None:
            self.initial.update(
                tools=list(instance.tools), knowledge_all=instance.knowledge is None,
                transcriber_lane=(instance.transcriber or {}).get("lane", ""),
                transcriber_keyterms_text="\n".join((instance.transcriber or {}).get("keyterms", [])),
                realtime_lane=(instance.realtime or {}).get("lane", ""),
                knowledge_ids="\n".join(instance.knowledge or []),
                transfer_targets_text="\n".join(f"{t['name']}: {t['e164']}{WARM if t.get('warm') else ''}"
                                                 for t in instance.transfer_targets),
                end_call_phrases_text="\n".join(instance.end_call_phrases), analysis_schema=instance.analysis_schema,
                appointment_types_json=instance.appointment_types)

    def _api_data(self):
        data = self.cleaned_data
        targets = []
        for line in _lines(data.get("transfer_targets_text")):
            warm = line.casefold().endswith(WARM.strip())
            line = line[:-len(WARM.strip())].rstrip() if warm else line
            name, separator, number = line.rpartition(":")
            target = {"name": name.strip(), "e164": number.strip()} if separator else {"name": "", "e164": line}
            targets.append({**target, "warm": True} if warm else target)
        return {
            "name": data.get("name") or "", "description": data.get("description") or "",
            "language": data.get("language") or "", "voice": data.get("voice") or "",
            # Key terms without a lane: the local recogniser's vocabulary.
            "transcriber": {key: value for key, value in (
                ("lane", data.get("transcriber_lane")), ("keyterms", _lines(data.get("transcriber_keyterms_text"))))
                if value} or None,
            "mode": data.get("mode") or None,
            "realtime": {"lane": data["realtime_lane"]} if data.get("realtime_lane") else None,
            "instructions": data.get("instructions") or "",
            "openingTouchpoint": data.get("opening_touchpoint") or "",
            "greeting": data.get("greeting") or "",
            "tools": list(data.get("tools") or []),
            "knowledge": None if data.get("knowledge_all") else _lines(data.get("knowledge_ids")),
            "model": {"lane": data.get("model_lane") or None, "temperature": data.get("model_temperature"),
                      "maxTokens": data.get("model_max_tokens")},
            "transferTargets": targets,
            "analysis": {"summary": bool(data.get("analysis_summary")), "schema": data.get("analysis_schema"),
                         "successCriteria": data.get("analysis_success_criteria") or ""},
            "maxDurationSec": data.get("max_duration_sec"), "silenceTimeoutSec": data.get("silence_timeout_sec"),
            "endCallPhrases": _lines(data.get("end_call_phrases_text")),
            "appointmentTypes": data.get("appointment_types_json") or [],
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
    readonly_fields = ["id", "created_at", "updated_at", "first_heard", "browser_test", "connection", "versions_view"]
    list_select_related = ["tenant"]
    fieldsets = [
        (None, {"fields": ["id", "tenant", "name", "description", "language", "voice", "transcriber_lane",
                           "transcriber_keyterms_text", "mode", "realtime_lane", "browser_test"]}),
        (_("Conversation"), {"fields": ["instructions", "greeting", "opening_touchpoint", "first_heard",
                                        "end_call_phrases_text", "max_duration_sec", "silence_timeout_sec"]}),
        (_("Tools and knowledge"), {"fields": ["tools", "transfer_targets_text", "knowledge_all", "knowledge_ids",
                                               "appointment_types_json"]}),
        (_("Model"), {"fields": ["model_lane", "connection", "model_temperature", "model_max_tokens"]}),
        (_("Analysis after the call"), {"fields": ["analysis_summary", "analysis_schema",
                                                    "analysis_success_criteria"]}),
        (_("Times"), {"fields": ["created_at", "updated_at"]}),
    ]
    VERSIONS_FIELDSET = (_("Draft and published versions"), {"fields": ["versions_view"]})

    def change_view(self, request, object_id, form_url="", extra_context=None):
        assistant = self.get_object(request, object_id)
        if request.method == "GET" and assistant is not None and references.thinks_offline(assistant):
            messages.warning(request, OFFLINE_BANNER)
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.display(description=_("Connection"))
    def connection(self, obj):
        """The chat lane's state as the gateway's readiness check sees it (checked on every view)."""
        if obj is None or obj.pk is None:
            return _("Shown once the assistant is saved.")
        return format_html(
            '{}<p><button type="submit" class="button" formaction="{}">{}</button></p><p class="help">{}</p>',
            references.lane_connection(obj) or "-", reverse("admin:assistants_assistant_check", args=[obj.pk]),
            gettext("Check the connection"),
            gettext("Calls the saved assistant's chat lane, voice and speech recognition once each and shows "
                    "what answered (a paid lane's call is counted)."))

    @admin.display(description=_("Try it"))
    def browser_test(self, obj):
        """"Im Browser testen": a page of the admin that talks to the assistant (agent_app)."""
        if obj is None or obj.pk is None:
            return _("Shown once the assistant is saved.")
        return format_html('<a class="button" href="{}">{}</a>', reverse("assistant-browser-test", args=[obj.pk]),
                           _("Test in the browser"))

    @admin.display(description=_("The caller hears first"))
    def first_heard(self, obj):
        """The disclosure and the greeting (or the opening script) as saved: what a caller hears first."""
        if obj is None or obj.pk is None:
            return _("Shown once the assistant is saved.")
        return references.first_heard(obj) or "-"

    # A user who may only view reads the stored fields, not the editor's lines (which
    # only a form has).
    VIEW_ONLY_FIELDS = {"end_call_phrases_text": ["end_call_phrases"], "transfer_targets_text": ["transfer_targets"],
                        "knowledge_all": ["knowledge"], "knowledge_ids": [], "transcriber_lane": ["transcriber"],
                        "transcriber_keyterms_text": [], "realtime_lane": ["realtime"],
                        "appointment_types_json": ["appointment_types"]}

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is not None:  # a new assistant has no versions yet
            fieldsets = [self.VERSIONS_FIELDSET, *fieldsets]
        if obj is None or self.has_change_permission(request, obj):
            return fieldsets
        return [(title, {**options, "fields": [shown for name in options["fields"]
                                               for shown in self.VIEW_ONLY_FIELDS.get(name, [name])]})
                for title, options in fieldsets]

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

    # --- Versions: draft vs. live, publish, the history with its diffs, restore ------------

    @admin.display(description=_("versions"))
    def versions_view(self, assistant: Assistant) -> SafeString:
        if assistant.pk is None:
            return format_html("—")
        history = version_history(assistant=assistant)
        live = history["live"]
        state = (format_html("{} <strong>v{}</strong>", gettext("Callers are answered with"), live) if live
                 else format_html("<strong>{}</strong>", gettext("Never published: callers are answered with the draft.")))
        draft = _changes_html(history["draftChanges"]) if history["draftChanges"] else format_html(
            "{}", gettext("The draft is the live version.") if live else "")
        publish = format_html(
            '<p><label for="version_note">{}</label> <input type="text" id="version_note" name="version_note" '
            'maxlength="500" size="50"> <button type="submit" class="button" formaction="{}">{}</button> '
            '<label><input type="checkbox" name="version_force" value="1"> {}</label></p>'
            '<p class="help">{}</p>',
            gettext("Note"), reverse("admin:assistants_assistant_publish", args=[assistant.pk]),
            gettext("Publish"), gettext("even if test cases fail"),
            gettext("Publishes the saved draft as the next version: save your changes first. Its test cases are "
                    "played first; one that fails stops the publish unless you tick the box (the note records it)."))
        rows = format_html_join("", '<tr><td><strong>{}</strong>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>'
                                    '<td><button type="submit" class="button" formaction="{}">{}</button></td></tr>', (
            (version["label"], format_html(" ({})", gettext("live")) if version["live"] else "",
             localize(localtime(version["publishedAt"])), version["publishedBy"], version["note"],
             _changes_html(version["changes"]),
             reverse("admin:assistants_assistant_restore", args=[assistant.pk, version["version"]]),
             gettext("Restore")) for version in history["versions"]))
        table = format_html('<table><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th>{}</th><th></th></tr>'
                            "</thead><tbody>{}</tbody></table>", gettext("Version"), gettext("Published"),
                            gettext("By"), gettext("Note"), gettext("Changes"), rows) if rows else ""
        return format_html("<p>{}</p><h4>{}</h4>{}{}{}", state, gettext("Unpublished changes of the draft"), draft,
                           publish, table)

    def get_urls(self) -> list[URLPattern]:
        return [
            path("<str:assistant_id>/publish/", self.admin_site.admin_view(self.publish_view),
                 name="assistants_assistant_publish"),
            path("<str:assistant_id>/versions/<int:number>/restore/", self.admin_site.admin_view(self.restore_view),
                 name="assistants_assistant_restore"),
            path("<str:assistant_id>/check/", self.admin_site.admin_view(self.check_view),
                 name="assistants_assistant_check"),
        ] + super().get_urls()

    def _changeable(self, request: HttpRequest, assistant_id: str) -> Assistant:
        assistant = self.get_queryset(request).filter(pk=assistant_id).first()
        if assistant is None or not self.has_change_permission(request, assistant):
            raise Http404("No such assistant.")
        return assistant

    def _audit(self, request: HttpRequest, assistant: Assistant, verb: str, number: int) -> None:
        audit_record(actor=actor_of(request), action=f"admin.{verb} assistants.assistant", tenant=assistant.tenant,
                     object_id=assistant.pk, request_id=request_id_of(request), details={"version": number})

    def _back(self, assistant: Assistant) -> HttpResponse:
        return HttpResponseRedirect(reverse("admin:assistants_assistant_change", args=[assistant.pk]))

    def publish_view(self, request: HttpRequest, assistant_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        assistant = self._changeable(request, assistant_id)
        try:
            version = services.assistant_publish(assistant=assistant, actor=actor_of(request),
                                                 note=request.POST.get("version_note", "").strip(),
                                                 force=request.POST.get("version_force") == "1")
        except services.ScenariosFailed as exc:
            failed = "; ".join(f"{item['name']}: {item['reason']}" for item in exc.details.get("failed", []))
            self.message_user(request, gettext("Not published: test cases fail with this draft (%(failed)s). Fix "
                                               "the draft or the test cases, or publish anyway.") % {"failed": failed},
                              messages.ERROR)
            return self._back(assistant)
        except ApiError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return self._back(assistant)
        self._audit(request, assistant, "publish", version.number)
        self.message_user(request, gettext("Published as v%(number)d: callers are now answered with it.")
                          % {"number": version.number}, messages.SUCCESS)
        return self._back(assistant)

    def check_view(self, request: HttpRequest, assistant_id: str) -> HttpResponse:
        """"Verbindung prüfen": each lane the saved assistant names is called once
        (references.connection_test); every outcome is a message on its page."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        assistant = self._changeable(request, assistant_id)
        outcomes = references.connection_test(assistant)
        for ok, text in outcomes:
            self.message_user(request, text, messages.SUCCESS if ok else messages.ERROR)
        if not outcomes:
            self.message_user(request, gettext("No connection to check."), messages.WARNING)
        return self._back(assistant)

    def restore_view(self, request: HttpRequest, assistant_id: str, number: int) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        assistant = self._changeable(request, assistant_id)
        try:
            services.assistant_restore(assistant=assistant, number=number)
        except services.UnknownVersion:
            raise Http404("No such version.") from None
        self._audit(request, assistant, "restore", number)
        self.message_user(request, gettext("v%(number)d was copied into the draft; publish it to make it live.")
                          % {"number": number}, messages.SUCCESS)
        return self._back(assistant)


def _changes_html(changes: list[dict[str, Any]]) -> SafeString:
    """What a version (or the draft) changed: the fields, instructions as their line diff."""
    return format_html_join("", "<div><code>{}</code>{}</div>", (
        (change["field"], format_html("<pre>{}</pre>", change["diff"]) if "diff" in change
         else format_html(": {} → {}", _short(change["before"]), _short(change["after"])))
        for change in changes))


def _short(value: object) -> str:
    text = "—" if value in (None, "", []) else str(value)
    return text if len(text) <= 200 else text[:199] + "…"
