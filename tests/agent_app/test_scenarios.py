"""Test calls (issue 38 §2): an assistant's scenarios — the caller's turns and what the
agent must (not) do — played against its draft or a version by the job worker, in text
or voice mode, with their tools in a sandbox; each kind of expectation passes and fails
for its reason; a failing scenario refuses a publish unless forced; a run is not a call.
The mind is the offline dialogue policy on the gateway's mock lane (the `mock_gateway`
fixture), the same for every run."""
import pytest

from console.assistants.models import Assistant

pytestmark = pytest.mark.django_db
CALLBACK_TURN = "Guten Tag, ich hätte gern einen Rückruf wegen meiner Bestellung."


@pytest.fixture
def run_jobs(django_capture_on_commit_callbacks):
    """The jobs a request queues after its commit run (inline, the test settings' sync queue)."""
    def run(request):
        with django_capture_on_commit_callbacks(execute=True):
            return request()
    return run


@pytest.fixture
def assistant(tenant_a, mock_gateway):
    return Assistant.objects.create(
        tenant=tenant_a, name="Empfang", instructions="Sie sind die Assistenz der Praxis.",
        tools=["create_callback", "transfer_call", "end_call"],
        transfer_targets=[{"name": "Zentrale", "e164": "+4930901820"}],
        analysis_schema={"type": "object", "properties": {"reason": {"type": "string"}}})


def _url(assistant, rest=""):
    return f"/v2/assistants/{assistant.pk}/scenarios{rest}"


def _scenario(api, assistant, **body):
    body = {"name": "Rückruf", "turns": [{"text": CALLBACK_TURN}], **body}
    response = api.post(_url(assistant), body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def _run(api, assistant, run_jobs, **body):
    response = run_jobs(lambda: api.post(_url(assistant, "/run"), body, format="json"))
    assert response.status_code == 202, response.content
    run = api.get(response["Location"])
    assert run.status_code == 200, run.content
    return run.json()


def _result(run, scenario):
    return next(item for item in run["results"] if item["scenario"] == scenario["id"])


def test_a_scenario_the_agent_satisfies_passes_and_one_it_does_not_fails_saying_why(api_a, assistant, run_jobs):
    good = _scenario(api_a, assistant, expectations=[{"type": "said", "text": "zurück"}])
    bad = _scenario(api_a, assistant, name="Quitten", expectations=[{"type": "said", "text": "Quittengelee"}])
    run = _run(api_a, assistant, run_jobs)
    assert run["status"] == "failed" and run["passed"] is False
    assert _result(run, good)["passed"] is True, _result(run, good)
    failed = _result(run, bad)
    assert failed["passed"] is False and "Quittengelee" in failed["reason"]
    assert [line["role"] for line in failed["transcript"]][:2] == ["assistant", "user"]
    assert failed["change"] == "new"
