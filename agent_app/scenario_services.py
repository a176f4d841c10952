"""Writes of scenarios and their runs (docs/api.md, "Test calls"), and the check that
publishing an assistant asks for."""
from typing import Any

from django.conf import settings
from django.db import transaction

from agent_app.models import Scenario, ScenarioRun
from agent_app.scenario_checks import scenario_fields
from console.assistants.models import Assistant
from console.assistants.selectors import assistant_version_of
from console.assistants.services import UnknownVersion
from console.jobs.services import job_enqueue_on_commit
from console.quotas import quota_take

RUN_JOB = "agent_app.scenario_runs.scenario_run_job"


@transaction.atomic
def scenario_create(*, assistant: Assistant, data: dict[str, Any]) -> Scenario:
    """A scenario of `assistant` from an API body (checked here); 409
    `tenant_limit_reached` past TENANT_MAX_SCENARIOS."""
    fields = scenario_fields(data)
    quota_take(tenant=assistant.tenant, name="scenarios")
    return Scenario.objects.create(tenant=assistant.tenant, assistant=assistant, **fields)


@transaction.atomic
def scenario_update(*, scenario: Scenario, data: dict[str, Any]) -> Scenario:
    fields = scenario_fields(data, partial=True)
    for name, value in fields.items():
        setattr(scenario, name, value)
    scenario.save(update_fields=[*fields, "updated_at"])
    return scenario


def scenario_delete(*, scenario: Scenario) -> None:
    scenario.delete()


@transaction.atomic
def scenario_run_create(*, assistant: Assistant, mode: str = ScenarioRun.Mode.TEXT, version: int | None = None,
                        trigger: str = "api", queued: bool = True) -> ScenarioRun:
    """A run of the assistant's scenarios against `version` (None: the draft), played by
    the job worker after the commit (`queued`; else by the caller). 404 `unknown_version`;
    409 `tenant_limit_reached` past TENANT_MAX_SCENARIO_RUNS_PER_DAY. The assistant keeps
    its last SCENARIO_RUNS_KEPT runs."""
    if version is not None and assistant_version_of(assistant=assistant, number=version) is None:
        raise UnknownVersion()
    quota_take(tenant=assistant.tenant, name="scenarioRuns")
    run = ScenarioRun.objects.create(tenant=assistant.tenant, assistant=assistant, version=version, mode=mode,
                                     trigger=trigger)
    kept = (ScenarioRun.objects.filter(assistant=assistant).order_by("-created_at", "-id")
            .values_list("pk", flat=True)[:settings.SCENARIO_RUNS_KEPT])
    ScenarioRun.objects.filter(assistant=assistant).exclude(pk__in=list(kept)).delete()
    if queued:
        job_enqueue_on_commit(RUN_JOB, kwargs={"run_id": run.pk})
    return run


def scenario_run_delete(*, run: ScenarioRun) -> None:
    run.delete()


def scenarios_publish_check(assistant: Assistant) -> dict[str, Any] | None:
    """Publishing's check (console.assistants.services.assistant_publish): the draft's
    scenarios played in text mode, now; None when there are none or all pass, else the
    refusal's details (`run`, `failed`: each scenario's id, name and reason)."""
    from agent_app.scenario_runs import scenario_run_execute

    if not Scenario.objects.filter(assistant=assistant).exists():
        return None
    run = scenario_run_create(assistant=assistant, trigger="publish", queued=False)
    if scenario_run_execute(run_id=run.pk):
        return None
    run.refresh_from_db(fields=["results"])
    failed = [{"scenario": item["scenario"], "name": item["name"], "reason": item["reason"]}
              for item in run.results if not item["passed"]]
    return {"run": run.pk, "failed": failed}
