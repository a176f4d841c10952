"""Playing an assistant's scenarios (docs/api.md, "Test calls"): the job of a run, and
the check publishing asks for.

A run is not a call: no Call row, nothing in /v2/calls, no minutes, no usage. The
assistant's mind (agent_app.mind) answers as in a call, as of the run's version, but
its tools act in a sandbox (`SandboxMind`): callbacks, transfers, ends and objections
are shown in the result and never made; HTTP tools give the scenario's stub answer
unless the scenario allows the real ones; the knowledge is searched as in a call.

Modes: `text` gives the caller's turns to the mind as text; `voice` speaks each turn
with our own synthesis, sends it through the 8 kHz phone band (μ-law), finds its end
(the endpointer), hears it (the recogniser), lets the mind answer what was heard and
speaks the answer — a caller the agent mishears fails the scenario there.
"""
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agent_app.audio import Endpointer, PhoneWire
from agent_app.conversation import get_ready, hear, opening, speak
from agent_app.mind import Mind, Reply
from agent_app.models import Scenario, ScenarioRun
from agent_app.scenario_checks import MAX_TEXT, Played, Turn, expectation_met
from calls_app.analysis import analysis_of_transcript
from console import tool_codes as codes
from console.assistants.builtin_tools import builtin_tool
from console.assistants.models import Assistant
from console.assistants.selectors import assistant_as_of, assistant_version_of
from console.assistants.services import TransferRefused, assistant_transfer_target_named
from console.errors import ApiError
from console.jobs.services import job_enqueue
from gateway_app.services import gateway_chat
from gateway_app.turns import TextDelta
from speech_app.services import synthesizer_for

logger = logging.getLogger("agent_app")
PHONE_WIRE = PhoneWire("mulaw", 8000)  # as the phone bridges widen it for the recogniser
JUDGE_PROMPT = ("Sie prüfen das Protokoll eines Testanrufs bei einer Telefonassistenz. Antworten Sie mit JA, wenn "
                "die Assistenz folgende Anforderung erfüllt, sonst mit NEIN, dann ein kurzer Grund.\n"
                "Anforderung: {rubric}")


def _error(name: str, code: str, message: str) -> dict[str, Any]:
    """A tool error as tools_app gives the model one (docs/api.md, "Tool errors")."""
    return {"ok": False, "tool": name, "error": code, "message": message}


class SandboxMind(Mind):
    """The assistant's mind whose tools do nothing outside the run (see the module)."""

    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.calls: list[dict[str, Any]] = []

    def _tool_result(self, name: str, arguments: object) -> dict[str, Any]:
        assert self.assistant is not None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                arguments = {}
        offered = {definition.get("function", {}).get("name") for definition in self.tools}
        sandbox = ""
        if name not in offered:
            result = _error(name, codes.UNKNOWN_TOOL, f"This assistant has no tool '{name[:64]}'.")
        elif (builtin := builtin_tool(name)) is not None and not builtin.effect_free:
            result, sandbox = self._sandboxed(name, arguments if isinstance(arguments, dict) else {})
        elif builtin is not None or self.scenario.real_tools:
            result = super()._tool_result(name, arguments)  # a search, or the real HTTP tool the scenario allows
        elif name in self.scenario.tool_stubs:
            result, sandbox = {"ok": True, "tool": name, "result": self.scenario.tool_stubs[name]}, "stub"
        else:
            result, sandbox = _error(name, codes.NO_STUB, f"The scenario gives no answer of {name} (toolStubs)."), "stub"
        self.calls.append({"tool": name, "arguments": arguments, "result": result, "sandbox": sandbox})
        return result

    def _sandboxed(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
        assert self.assistant is not None
        if name == "transfer_call":
            try:
                target = assistant_transfer_target_named(assistant=self.assistant, name=arguments.get("target", ""))
            except TransferRefused as exc:
                return _error(name, codes.TRANSFER_REFUSED, exc.message), "no transfer made"
            return ({"ok": True, "tool": name, "action": "transfer", "result": target},
                    f"not transferred (would go to {target['name']})")
        if name == "create_callback":
            return ({"ok": True, "tool": name, "result": {"leadId": None, "phone": arguments.get("phone"),
                                                          "preferredAt": None}}, "no lead created")
        if name == "end_call":
            return {"ok": True, "tool": name, "action": "end_call", "result": {"ending": True}}, "run ended"
        if name == "opt_out":
            return {"ok": True, "tool": name, "result": {"recorded": True}}, "no number blocked"
        return {"ok": True, "tool": name, "result": {"done": True}}, "not carried out (a test call)"


# --- The caller's voice --------------------------------------------------------------------

def caller_speech(text: str, *, language: str) -> tuple[bytes, int]:
    """The caller's turn spoken by our own synthesis: (16-bit PCM, its sample rate)."""
    engine = synthesizer_for(language, voice=language)
    parts = list(engine.stream(text, voice=language))
    return b"".join(part.pcm for part in parts), (parts[0].sample_rate if parts else 16000)


def heard_on_the_phone(text: str, *, language: str, phrases: list[str] | None = None) -> str:
    """What the recogniser hears of `text` spoken by the caller through the phone band:
    synthesised, μ-law at 8 kHz, back to 16 kHz, its end found as in a call, heard with
    the assistant's vocabulary (`phrases`) as a call hears it."""
    pcm, rate = caller_speech(text, language=language)
    pcm16k = PHONE_WIRE.to_pcm16k(PHONE_WIRE.from_pcm(pcm, rate))
    endpointer = Endpointer()
    events = endpointer.feed(pcm16k + b"\0" * 32000)  # a second of silence after the turn
    utterances = [value for kind, value in events if kind == "end"]
    return " ".join(filter(None, (hear(u.pcm, language=language, phrases=phrases) for u in utterances)))


# --- Playing one scenario ------------------------------------------------------------------

def _reply(mind: SandboxMind, text: str, *, voice: bool, assistant: Assistant) -> tuple[Reply, int]:
    """The mind's reply and the milliseconds until it began (voice: until its first audio)."""
    start = time.monotonic()
    reply = mind.turn(text)
    if voice and reply.text:
        audio = speak(reply.text, language=assistant.language, voice=assistant.voice, wire=PHONE_WIRE)
        next(iter(audio), b"")
    return reply, int((time.monotonic() - start) * 1000)


def scenario_play(*, scenario: Scenario, assistant: Assistant, mode: str, run_id: str) -> dict[str, Any]:
    """One scenario played against `assistant` (as of the run's version): its result."""
    tenant = assistant.tenant
    caller = scenario.variables.get("callerNumber", "")
    mind = SandboxMind(scenario=scenario, tenant=tenant, call_id=f"run:{run_id}", language=assistant.language,
                       assistant=assistant, caller_e164=caller, channel="Telefon")
    try:
        opened = opening(tenant=tenant, variables={}, assistant=assistant).text
    except ApiError:
        opened = ""
    transcript: list[dict[str, Any]] = [{"role": "assistant", "text": opened}] if opened else []
    turns: list[Turn] = []
    voice = mode == ScenarioRun.Mode.VOICE
    for given in _caller_turns(scenario, assistant, transcript):
        text = given.get("text", "")
        if given.get("dtmf"):
            transcript.append({"role": "system", "text": f"DTMF {given['dtmf']}"})
        heard = heard_on_the_phone(text, language=assistant.language,
                                   phrases=(assistant.transcriber or {}).get("keyterms") or None) \
            if voice and text else text
        turn = Turn(said=text, heard=heard)
        turns.append(turn)
        if text:
            transcript.append({"role": "user", "text": heard, **({"said": text} if voice else {})})
            if not heard:
                transcript.append({"role": "system", "text": "Nichts verstanden: die Erkennung hörte keine Worte."})
        if heard:
            done = len(mind.calls)
            reply, turn.latency_ms = _reply(mind, heard, voice=voice, assistant=assistant)
            turn.reply, turn.action, turn.tools = reply.text, reply.action, mind.calls[done:]
            transcript += [{"role": "system", "text": note} for note in reply.notes]
            transcript.append({"role": "assistant", "text": reply.text})
        if turn.action:
            break  # the call ended or moved on
    played = Played(opening=opened, turns=turns, analysis=_analysis(assistant, transcript, mind.calls, caller),
                    judge=_judge(assistant, transcript))
    return _result(scenario, played, transcript, mind.calls, mode)


PERSONA_PROMPT = ("Sie spielen in einem Testanruf den Anrufer bei einer Telefonassistenz, auf Deutsch: {description}\n"
                  "Antworten Sie nur mit dem, was der Anrufer als Nächstes sagt, in einem oder zwei Sätzen. Ist "
                  "Ihr Anliegen erledigt, sagen Sie nur ENDE.")


def _caller_turns(scenario: Scenario, assistant: Assistant,
                  transcript: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The caller's turns: the scenario's own, or those a chat lane plays for its persona
    (at most its maxTurns; not deterministic), each written after the agent's reply."""
    if not scenario.persona:
        yield from scenario.turns
        return
    for _ in range(scenario.persona["maxTurns"]):
        messages = [{"role": "system", "content": PERSONA_PROMPT.format(description=scenario.persona["description"])}]
        messages += [{"role": "user" if line["role"] == "assistant" else "assistant", "content": line["text"]}
                     for line in transcript if line["role"] in ("assistant", "user") and line["text"]]
        try:
            stream = gateway_chat(messages=messages, language=assistant.language or "de",
                                  deadline=settings.AGENT_THINK_DEADLINE_SEC)
            with stream:
                text = "".join(event.text for event in stream if isinstance(event, TextDelta)).strip()
        except ApiError as exc:
            transcript.append({"role": "system", "text": f"Der simulierte Anrufer antwortete nicht ({exc.code})."})
            return
        if not text or text.upper().startswith("ENDE"):
            return
        yield {"text": text[:MAX_TEXT]}


def _result(scenario: Scenario, played: Played, transcript: list[dict[str, Any]], calls: list[dict[str, Any]],
            mode: str) -> dict[str, Any]:
    checked = []
    for index, given in enumerate(scenario.turns):
        for expectation in given.get("expectations", []):
            scope = played.turns[index:index + 1]
            met, why = expectation_met(expectation, played, scope, whole=False) if scope else (
                False, "Das Gespräch war vor diesem Zug zu Ende.")
            checked.append({"expectation": expectation, "turn": index + 1, "passed": met, "reason": why})
    for expectation in scenario.expectations:
        met, why = expectation_met(expectation, played, played.turns, whole=True)
        checked.append({"expectation": expectation, "turn": None, "passed": met, "reason": why})
    for item in checked:
        item["nonDeterministic"] = item["expectation"]["type"] == "judge"
    failures = [item for item in checked if not item["passed"]]
    return {
        "scenario": scenario.pk, "name": scenario.name, "mode": mode, "passed": not failures,
        "status": "failed" if failures else "passed", "reason": failures[0]["reason"] if failures else "",
        "nonDeterministic": bool(scenario.persona) or any(item["nonDeterministic"] for item in checked),
        "expectations": checked, "transcript": transcript,
        "toolCalls": [{key: call[key] for key in ("tool", "arguments", "result")} for call in calls],
        "sandbox": [{"tool": call["tool"], "what": call["sandbox"]} for call in calls if call["sandbox"]],
        "latencyMs": [turn.latency_ms for turn in played.turns],
    }


def _analysis(assistant: Assistant, transcript: list[dict[str, Any]], calls: list[dict[str, Any]],
              caller: str) -> Callable[[], dict[str, Any]]:
    def made() -> dict[str, Any]:
        lines = [(line["role"], line["text"]) for line in transcript]
        actions = [{"tool": call["tool"], **({"target": call["result"]["result"].get("name", "")}
                                             if call["tool"] == "transfer_call" and call["result"].get("ok") else {})}
                   for call in calls]
        return analysis_of_transcript(assistant=assistant, lines=lines, actions=actions, caller=caller)
    return made


def _judge(assistant: Assistant, transcript: list[dict[str, Any]]) -> Callable[[str], tuple[bool, str]]:
    def judged(rubric: str) -> tuple[bool, str]:
        record = "\n".join(f"{line['role']}: {line['text']}" for line in transcript)
        messages = [{"role": "system", "content": JUDGE_PROMPT.format(rubric=rubric)},
                    {"role": "user", "content": record[-12_000:]}]
        try:
            stream = gateway_chat(messages=messages, language="de", lane=assistant.model_lane or None,
                                  deadline=settings.AGENT_THINK_DEADLINE_SEC)
            with stream:
                text = "".join(event.text for event in stream if isinstance(event, TextDelta))
        except ApiError as exc:
            return False, f"Kein Prüfer antwortete ({exc.code})."
        answer = text.strip()
        verdict = answer.upper().startswith("JA")
        return verdict, answer[:300] or "keine Antwort"
    return judged


# --- A run ---------------------------------------------------------------------------------

def _previous(run: ScenarioRun) -> dict[str, bool]:
    """Each scenario's verdict in the assistant's last finished run before `run`."""
    last = (ScenarioRun.objects.filter(assistant_id=run.assistant_id, finished_at__isnull=False,
                                       created_at__lte=run.created_at).exclude(pk=run.pk)
            .order_by("-created_at", "-id").only("results").first())
    return {item["scenario"]: item["passed"] for item in (last.results if last else [])}


def _change(before: bool | None, now: bool) -> str:
    if before is None:
        return "new"
    if before == now:
        return "unchanged"
    return "now_passing" if now else "now_failing"


def _budget_sec() -> float:
    """How long one job may play before it hands the rest of its run to the next job:
    well within the queue's timeout (JOB_TIMEOUT_SEC), which would kill it."""
    return max(5.0, float(settings.Q_CLUSTER.get("timeout") or 60) - 20.0)


def _failed_to_play(scenario: Scenario, mode: str, exc: Exception) -> dict[str, Any]:
    return {"scenario": scenario.pk, "name": scenario.name, "mode": mode, "passed": False, "status": "failed",
            "reason": f"Der Testfall konnte nicht abgespielt werden: {exc!r:.200}", "expectations": [],
            "transcript": [], "toolCalls": [], "sandbox": [], "latencyMs": [], "nonDeterministic": False}


def scenario_run_execute(*, run_id: str, budget_sec: float | None = None) -> bool | None:
    """The job of a run: plays each scenario of the assistant (at most SCENARIO_MAX_PER_RUN)
    and keeps each result as it comes; True when every one passed. Past `budget_sec`
    (a job: within the queue's timeout) it queues the next job for the scenarios still
    to play and returns None (each job plays one at least); publishing and the command
    play without one. A run
    finished already is left as it is (the queue may hand a job on twice)."""
    from agent_app.scenario_services import RUN_JOB

    with transaction.atomic():
        run = (ScenarioRun.objects.select_for_update().select_related("assistant__tenant")
               .filter(pk=run_id).first())
        if run is None or run.finished_at is not None:
            return None
        run.status = ScenarioRun.Status.RUNNING
        run.save(update_fields=["status"])
    started = time.monotonic()
    draft = run.assistant
    version = assistant_version_of(assistant=draft, number=run.version) if run.version else None
    assistant = assistant_as_of(assistant=draft, version=version) if version is not None else draft
    before = _previous(run)
    results = list(run.results)
    played = {result["scenario"] for result in results}
    scenarios = Scenario.objects.filter(assistant_id=draft.pk).order_by("name", "id")[:settings.SCENARIO_MAX_PER_RUN]
    if run.mode == ScenarioRun.Mode.VOICE:
        get_ready(language=assistant.language)  # the recogniser loaded before the first turn is timed
    done_here = 0
    for scenario in scenarios:
        if scenario.pk in played:
            continue
        if done_here and budget_sec is not None and time.monotonic() - started > budget_sec:
            job_enqueue(RUN_JOB, kwargs={"run_id": run.pk})
            return None
        try:
            result = scenario_play(scenario=scenario, assistant=assistant, mode=run.mode, run_id=run.pk)
        except Exception as exc:  # noqa: BLE001 - the scenario fails with the reason; the others play
            logger.exception("Scenario %s of run %s could not be played", scenario.pk, run.pk)
            result = _failed_to_play(scenario, run.mode, exc)
        result["change"] = _change(before.get(scenario.pk), result["passed"])
        results.append(result)
        done_here += 1
        ScenarioRun.objects.filter(pk=run.pk).update(results=results)
    passed = all(result["passed"] for result in results)
    ScenarioRun.objects.filter(pk=run.pk).update(
        results=results, finished_at=timezone.now(),
        status=ScenarioRun.Status.PASSED if passed else ScenarioRun.Status.FAILED)
    return passed


def scenario_run_job(*, run_id: str) -> bool | None:
    """The queued job of a run (agent_app.scenario_services.RUN_JOB): plays within the
    queue's timeout, the rest in the next job."""
    return scenario_run_execute(run_id=run_id, budget_sec=_budget_sec())
