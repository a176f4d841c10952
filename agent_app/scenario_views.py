"""`/v2/assistants/{id}/scenarios` and their runs (docs/api.md, "Test calls")."""
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from agent_app import scenario_services as services
from agent_app.models import Scenario, ScenarioRun
from console.api import TenantViewSet, validated
from console.assistants.models import Assistant
from console.errors import NotFound
from console.openapi import errors
from console.tenants.models import Tenant

EXAMPLE = {
    "name": "Rückruf wird angeboten",
    "turns": [{"text": "Guten Tag, ich hätte gern einen Rückruf wegen meiner Bestellung.",
               "expectations": [{"type": "said", "text": "zurück"}]}],
    "variables": {"callerNumber": "+4917612345678"},
    "expectations": [{"type": "not_said", "pattern": "(?i)quittengelee"}, {"type": "callback_created"}],
}


class ScenarioBodySerializer(serializers.Serializer):
    """The body's shape for the OpenAPI document (checked by agent_app.scenario_checks)."""

    name = serializers.CharField(max_length=200)
    turns = serializers.ListField(child=serializers.DictField(), required=False,
                                  help_text='The caller\'s turns: {"text", "dtmf"?, "expectations"?}.')
    variables = serializers.DictField(required=False, help_text="callerNumber")
    expectations = serializers.ListField(child=serializers.DictField(), required=False,
                                         help_text='Checked at the end: {"type", …} (docs/api.md, "Test calls").')
    toolStubs = serializers.DictField(required=False, help_text="Each HTTP tool's JSON answer in a run, by name.")
    realTools = serializers.BooleanField(required=False, help_text="Call the real HTTP tools.")
    persona = serializers.DictField(required=False, allow_null=True,
                                    help_text='A simulated caller instead of turns: {"description", "maxTurns"?}; '
                                              "not deterministic.")


class RunRequestSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=ScenarioRun.Mode.values, default=ScenarioRun.Mode.TEXT)
    version = serializers.IntegerField(min_value=1, max_value=999_999_999, required=False, allow_null=True,
                                       default=None, help_text="A published version; empty: the draft.")


def scenario_shown(scenario: Scenario) -> dict[str, Any]:
    return {"id": scenario.pk, "assistant": scenario.assistant_id, "name": scenario.name, "turns": scenario.turns,
            "variables": scenario.variables, "expectations": scenario.expectations,
            "toolStubs": scenario.tool_stubs, "realTools": scenario.real_tools, "persona": scenario.persona,
            "createdAt": scenario.created_at.isoformat(), "updatedAt": scenario.updated_at.isoformat()}


def run_shown(run: ScenarioRun, *, results: bool = True) -> dict[str, Any]:
    finished = run.status in (ScenarioRun.Status.PASSED, ScenarioRun.Status.FAILED)
    shown = {"id": run.pk, "assistant": run.assistant_id, "version": run.version, "mode": run.mode,
             "status": run.status, "passed": run.status == ScenarioRun.Status.PASSED if finished else None,
             "trigger": run.trigger, "createdAt": run.created_at.isoformat(),
             "finishedAt": run.finished_at.isoformat() if run.finished_at else None,
             "url": f"/v2/assistants/{run.assistant_id}/scenarios/runs/{run.pk}",
             "counts": {"passed": sum(1 for r in run.results if r.get("passed")),
                        "failed": sum(1 for r in run.results if not r.get("passed"))}}
    if results:
        shown["results"] = run.results
    return shown


class ScenarioViewSet(TenantViewSet):
    model = Scenario
    serializer_class = ScenarioBodySerializer
    not_found_message = "No scenario with this id."
    lookup_value_regex = "[^/]+"

    def _assistant(self) -> Assistant:
        assistant = Assistant.objects.for_tenant(_tenant(self.request)).filter(pk=self.kwargs["assistant_id"]).first()
        if assistant is None:
            raise NotFound("No assistant with this id.")
        assistant.tenant = _tenant(self.request)  # selected by it: naming it costs no query
        return assistant

    def filter_queryset(self, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(assistant_id=self._assistant().pk)

    def _run(self, run_id: str) -> ScenarioRun:
        run = (ScenarioRun.objects.for_tenant(_tenant(self.request))
               .filter(assistant_id=self._assistant().pk, pk=run_id).first())
        if run is None:
            raise NotFound("No test run with this id.")
        return run

    @extend_schema(responses=OpenApiTypes.OBJECT, summary="List an assistant's test cases")
    def list(self, request: Request, assistant_id: str) -> Response:
        rows = self.filter_queryset(self.get_queryset()).order_by("name", "id")
        return Response({"data": [scenario_shown(row) for row in rows]})

    @extend_schema(request=ScenarioBodySerializer, responses={201: OpenApiTypes.OBJECT}, extensions=errors(404, 409),
                   examples=[OpenApiExample("A callback", request_only=True, value=EXAMPLE)],
                   summary="Create a test case")
    def create(self, request: Request, assistant_id: str) -> Response:
        scenario = services.scenario_create(assistant=self._assistant(), data=_body(request))
        return Response(scenario_shown(scenario), status=status.HTTP_201_CREATED)

    @extend_schema(responses=OpenApiTypes.OBJECT, extensions=errors(404), summary="Get one test case")
    def retrieve(self, request: Request, assistant_id: str, pk: str) -> Response:
        return Response(scenario_shown(self.get_object()))

    @extend_schema(request=ScenarioBodySerializer(partial=True), responses=OpenApiTypes.OBJECT,
                   extensions=errors(404), summary="Change a test case")
    def partial_update(self, request: Request, assistant_id: str, pk: str) -> Response:
        scenario = self.get_object()
        return Response(scenario_shown(services.scenario_update(scenario=scenario, data=_body(request))))

    @extend_schema(responses={204: None}, extensions=errors(404), summary="Delete a test case")
    def destroy(self, request: Request, assistant_id: str, pk: str) -> Response:
        services.scenario_delete(scenario=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=RunRequestSerializer, responses={202: OpenApiTypes.OBJECT}, extensions=errors(404, 409),
                   operation_id="assistants_scenarios_run", summary="Run an assistant's test cases")
    @action(detail=False, methods=["post"])
    def run(self, request: Request, assistant_id: str) -> Response:
        data = validated(RunRequestSerializer, request.data)
        run = services.scenario_run_create(assistant=self._assistant(), mode=data["mode"], version=data["version"])
        return Response(run_shown(run), status=status.HTTP_202_ACCEPTED, headers={"Location": run_shown(run)["url"]})

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="assistants_scenarios_runs_list",
                   extensions=errors(404), summary="List an assistant's test runs")
    @action(detail=False, methods=["get"])
    def runs(self, request: Request, assistant_id: str) -> Response:
        rows = ScenarioRun.objects.for_tenant(_tenant(request)).filter(assistant_id=self._assistant().pk)
        return Response({"data": [run_shown(row, results=False) for row in rows.order_by("-created_at", "-id")]})

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="assistants_scenarios_run_retrieve",
                   extensions=errors(404), summary="Get one test run with its results")
    @action(detail=False, methods=["get"], url_path=r"runs/(?P<run_id>[^/]+)")
    def run_detail(self, request: Request, assistant_id: str, run_id: str) -> Response:
        return Response(run_shown(self._run(run_id)))

    @extend_schema(responses={204: None}, operation_id="assistants_scenarios_run_destroy", extensions=errors(404),
                   summary="Delete a test run")
    @run_detail.mapping.delete
    def run_delete(self, request: Request, assistant_id: str, run_id: str) -> Response:
        services.scenario_run_delete(run=self._run(run_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


def _tenant(request: Any) -> Tenant:
    """The request's tenant (TenantBoundMixin selected it)."""
    return request.tenant


def _body(request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise serializers.ValidationError({"non_field_errors": ["The body must be a JSON object."]})
    return dict(request.data)
