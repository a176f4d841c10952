"""The `cli` mode: a real subprocess with the prompt on stdin, bounded in time and output."""
import os
import select
import shlex
import sys

import pytest

from gateway_app.providers.cli import run_command
from registry_app.lanes.failover import LaneFailure
from tests.gateway_app.conftest import chat_lane, load_lanes

PYTHON = shlex.quote(sys.executable)


def python_command(code):
    return f"{PYTHON} -c {shlex.quote(code)}"


def test_the_prompt_goes_to_stdin_and_stdout_is_the_answer(gateway, lane_settings):
    load_lanes(chat_lane("chat-cli", endpoint="bridge:cli"))
    lane_settings("chat-cli", cmd=python_command("import sys; print('Echo: ' + sys.stdin.read().upper())"))
    body = gateway.post("/v1/agent", {"prompt": "guten tag", "system": "sei kurz"}, format="json").json()
    assert (body["lane"], body["mode"]) == ("chat-cli", "cli")
    assert body["text"] == "Echo: SEI KURZ\n\nGUTEN TAG"


def test_the_command_gets_no_secrets_from_the_servers_environment(monkeypatch):
    monkeypatch.setenv("GATEWAY_KEY_CHAT_SECRET", "sk-must-not-leak")
    text = run_command(python_command("import os; print(sorted(os.environ))"), stdin_text="", timeout=10,
                       max_bytes=10_000)
    assert "GATEWAY_KEY_CHAT_SECRET" not in text and "SECRET_KEY" not in text


@pytest.mark.parametrize("code, timeout, outcome, detail", [
    ("import threading; threading.Event().wait()", 0.3, "timeout", "the command did not finish within 0.3 s"),
    ("import sys; sys.stdout.write('x' * 100_000)", 10, "bad_response", "the command printed more than 1000 bytes"),
    ("import sys; sys.exit(3)", 10, "server_error", "the command exited with status 3"),
    ("pass", 10, "bad_response", "the command printed nothing"),
])
def test_a_failing_command_is_a_lane_failure(code, timeout, outcome, detail):
    with pytest.raises(LaneFailure) as failure:
        run_command(python_command(code), stdin_text="Hallo", timeout=timeout, max_bytes=1000)
    assert (failure.value.outcome, failure.value.detail) == (outcome, detail)


def test_a_command_that_does_not_exist_cannot_be_reached():
    with pytest.raises(LaneFailure) as failure:
        run_command("/nonexistent/assistant --prompt", stdin_text="Hallo", timeout=1, max_bytes=1000)
    assert failure.value.outcome == "connection_error"
    assert failure.value.detail.startswith("cannot run /nonexistent/assistant")


def _ends_within(pid, seconds):
    """Whether the process ends (exits, or is killed) within `seconds`: its pidfd turns
    readable when it does (a process that is gone already has ended)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _writable, _failed = select.select([pidfd], [], [], seconds)
        return bool(readable)
    finally:
        os.close(pidfd)


@pytest.mark.slow  # waits out a command and its child process
def test_a_slow_command_is_stopped_with_its_children(tmp_path):
    pid_file = tmp_path / "child.pid"
    child = (f"import os, pathlib, threading; pathlib.Path({str(pid_file)!r}).write_text(str(os.getpid())); "
             "threading.Event().wait()")
    code = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {child!r}]).wait()"
    with pytest.raises(LaneFailure) as failure:
        run_command(python_command(code), stdin_text="", timeout=2, max_bytes=1000)
    assert failure.value.outcome == "timeout"
    # Killed with the command's process group; SIGKILL lands when the kernel next schedules it.
    assert _ends_within(int(pid_file.read_text()), seconds=5)


def test_a_failing_cli_lane_falls_over_to_the_next(gateway, lane_settings):
    load_lanes(chat_lane("chat-cli", endpoint="bridge:cli", priority=10),
               chat_lane("chat-gateway-mock", endpoint="/v1/agent", priority=90))
    lane_settings("chat-cli", cmd=python_command("import sys; sys.exit(1)"))
    body = gateway.post("/v1/agent", {"prompt": "ping"}, format="json").json()
    assert [(a["lane"], a["outcome"], a["mode"]) for a in body["attempts"]] == [
        ("chat-cli", "server_error", "cli"), ("chat-gateway-mock", "ok", "mock")]
