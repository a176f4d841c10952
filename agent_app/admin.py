"""The admin's "Testfälle" and "Testläufe" (docs/api.md, "Test calls"): an operator
writes an assistant's test cases with the API's fields (checked by the same code), runs
them (text or voice) and reads each run's results."""
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from agent_app.models import Scenario, ScenarioRun
from agent_app.scenario_checks import scenario_fields
from agent_app.scenario_services import scenario_run_create
from console.errors import ApiError
from console.quotas import quota_max
from console.tenants.admin_scoping import ReadOnlyAdminMixin, TenantScopedAdmin

ROLES = {"user": pgettext_lazy("choice", "User"), "assistant": pgettext_lazy("choice", "Assistant"),
         "system": pgettext_lazy("choice", "System")}
# The API's names of the model's JSON fields.
API_NAME = {"turns": "turns", "variables": "variables", "expectations": "expectations", "tool_stubs": "toolStubs",
            "persona": "persona"}


class ScenarioForm(forms.ModelForm):
    """The fields of POST /v2/assistants/{id}/scenarios, checked by the same code."""

    turns = forms.JSONField(label=_("Caller's turns"), widget=forms.Textarea(attrs={"rows": 8}), required=False,
                            initial=[{"text": "Guten Tag, ich hätte gern einen Rückruf.",
                                      "expectations": [{"type": "said", "text": "zurück"}]}],
                            help_text=_('A list of {"text": …, "dtmf"?: …, "expectations"?: […]} (docs/api.md, '
                                        '"Test calls").'))
    expectations = forms.JSONField(label=_("Expectations at the end"), required=False, initial=list,
                                   widget=forms.Textarea(attrs={"rows": 5}),
                                   help_text=_('E.g. [{"type": "said", "text": "zurück"}, {"type": '
                                               '"callback_created"}]; "judge" is not deterministic.'))
    variables = forms.JSONField(label=_("Caller variables"), required=False, initial=dict,
                                widget=forms.Textarea(attrs={"rows": 2}), help_text=_('The number the call seems to come from, e.g. {"callerNumber": "+4917612345678"}.'))
    persona = forms.JSONField(label=_("Simulated caller"), required=False, widget=forms.Textarea(attrs={"rows": 3}),
                              help_text=_('Instead of turns, a chat lane plays the caller (not deterministic): '
                                          '{"description": "Frau Schmidt möchte ihren Termin absagen", "maxTurns": 6}.'))
    tool_stubs = forms.JSONField(label=_("Tool answers"), required=False, initial=dict,
                                 widget=forms.Textarea(attrs={"rows": 4}),
                                 help_text=_("The JSON answer of each HTTP tool (by name) in a test run."))

    class Meta:
        model = Scenario
        fields = ["tenant", "assistant", "name", "turns", "persona", "variables", "expectations", "tool_stubs",
                  "real_tools"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        assistant = cleaned.get("assistant")
        tenant = cleaned.get("tenant") or getattr(self.instance, "tenant", None)
        if assistant is not None and tenant is not None and assistant.tenant_id != tenant.pk:
            self.add_error("assistant", _("The assistant is another tenant's."))
        if self.errors:
            return cleaned
        data: dict[str, Any] = {"expectations": cleaned.get("expectations") or [],
                                "variables": cleaned.get("variables") or {},
                                "toolStubs": cleaned.get("tool_stubs") or {}, "persona": cleaned.get("persona")}
        if cleaned.get("turns") or not cleaned.get("persona"):
            data["turns"] = cleaned.get("turns") or []
        try:
            fields = scenario_fields({"name": cleaned.get("name", ""), **data})
        except ApiError as exc:
            for field, problems in exc.details.items():
                model_field = next((name for name, api in API_NAME.items() if api == field), None)
                self.add_error(model_field, ValidationError(list(problems)))
            return cleaned
        cleaned.update({name: fields.get(name, [] if name == "turns" else None) for name in API_NAME})
        if self.instance._state.adding and tenant is not None:
            limit = quota_max("scenarios")
            if Scenario.objects.for_tenant(tenant).count() >= limit:
                self.add_error(None, _("The tenant has as many test cases as it may have (%(max)s): delete one "
                                       "first.") % {"max": limit})
        return cleaned


@admin.register(Scenario)
class ScenarioAdmin(TenantScopedAdmin):
    form = ScenarioForm
    list_display = ["name", "assistant", "tenant", "last_result", "updated_at"]
    list_filter = ["tenant", "assistant"]
    search_fields = ["name", "id"]
    list_select_related = ["tenant", "assistant"]
    readonly_fields = ["id", "created_at", "updated_at"]
    actions = ["run_text", "run_voice"]

    @admin.display(description=_("Last result"))
    def last_result(self, scenario: Scenario) -> str:
        run = (ScenarioRun.objects.filter(assistant_id=scenario.assistant_id, finished_at__isnull=False)
               .order_by("-created_at").only("results").first())
        found = next((item for item in (run.results if run else []) if item["scenario"] == scenario.pk), None)
        if found is None:
            return "—"
        if found["passed"]:
            return str(ScenarioRun.Status.PASSED.label)
        return f"{ScenarioRun.Status.FAILED.label}: {found['reason']}"

    def _run(self, request: HttpRequest, queryset: QuerySet[Scenario], mode: str) -> None:
        started = 0
        for assistant in {scenario.assistant for scenario in queryset.select_related("assistant__tenant")}:
            try:
                scenario_run_create(assistant=assistant, mode=mode, trigger="admin")
            except ApiError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                continue
            started += 1
        if started:
            self.message_user(request, gettext("Test runs started: %(count)d; their results are under “Test runs”.")
                              % {"count": started}, messages.SUCCESS)

    @admin.action(description=_("Run the test cases of their assistants (text)"))
    def run_text(self, request: HttpRequest, queryset: QuerySet[Scenario]) -> None:
        self._run(request, queryset, ScenarioRun.Mode.TEXT)

    @admin.action(description=_("Run the test cases of their assistants (voice)"))
    def run_voice(self, request: HttpRequest, queryset: QuerySet[Scenario]) -> None:
        self._run(request, queryset, ScenarioRun.Mode.VOICE)


@admin.register(ScenarioRun)
class ScenarioRunAdmin(ReadOnlyAdminMixin, TenantScopedAdmin):
    list_display = ["id", "assistant", "mode", "version", "status", "trigger", "created_at", "tenant"]
    list_filter = ["tenant", "status", "mode"]
    list_select_related = ["tenant", "assistant"]
    readonly_fields = fields = ("id", "tenant", "assistant", "version", "mode", "status", "trigger", "created_at",
                                "finished_at", "results_view")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return TenantScopedAdmin.has_delete_permission(self, request, obj)  # runs are erasable

    @admin.display(description=_("results"))
    def results_view(self, run: ScenarioRun) -> SafeString:
        def one(result: dict[str, Any]) -> SafeString:
            verdict = str(ScenarioRun.Status.PASSED.label if result["passed"] else ScenarioRun.Status.FAILED.label)
            checks = format_html_join("", "<li>{}: {} {}</li>", (
                (item["expectation"].get("type"), "✔" if item["passed"] else "✘", item["reason"])
                for item in result.get("expectations", [])))
            lines = format_html_join("", "<li><em>{}</em>: {}</li>", (
                (ROLES.get(line["role"], line["role"]), line["text"]) for line in result.get("transcript", [])))
            return format_html("<h4>{} — {}{}</h4><p>{}</p><ul>{}</ul><ol>{}</ol>", result["name"], verdict,
                               " (" + gettext("not deterministic") + ")" if result.get("nonDeterministic") else "",
                               result.get("reason", ""), checks, lines)
        return format_html_join("", "{}", ((one(result),) for result in run.results))
