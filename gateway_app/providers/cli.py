"""The `cli` mode: a configured command, the prompt on its stdin, its stdout the answer.

The command (`GATEWAY_CMD_<LANE>`) is split like a shell would split it but run
without a shell, in its own process group, with a minimal environment (PATH, HOME,
LANG, LC_ALL: the server's secrets are not handed to it). It is stopped, with its
children, when it runs out of time or prints more than the output cap.
"""
import os
import shlex
import signal
import subprocess
import threading

from registry_app.lanes.failover import LaneFailure

_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL")


def _stop(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_command(command, *, stdin_text, timeout, max_bytes):
    """The command's stdout as text; LaneFailure when it cannot run, fails, is slow or too talkative."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise LaneFailure("connection_error", f"the command cannot be parsed: {exc}") from None
    if not argv:
        raise LaneFailure("connection_error", "the command is empty")
    environment = {name: os.environ[name] for name in _ENVIRONMENT if name in os.environ}
    try:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   env=environment, start_new_session=True)
    except OSError as exc:
        raise LaneFailure("connection_error", f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    output, too_long = bytearray(), threading.Event()

    def read():
        while chunk := process.stdout.read1(64 * 1024):
            if len(output) + len(chunk) > max_bytes:
                too_long.set()
                _stop(process)
                return
            output.extend(chunk)

    def write():
        try:
            process.stdin.write(stdin_text.encode("utf-8"))
            process.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # the command does not read all of its input; its answer still counts

    threads = [threading.Thread(target=read, daemon=True), threading.Thread(target=write, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        process.wait()
        raise LaneFailure("timeout", f"the command did not finish within {timeout:.1f} s") from None
    finally:
        for thread in threads:
            thread.join(timeout=1)
        process.stdout.close()
    if too_long.is_set():
        raise LaneFailure("bad_response", f"the command printed more than {max_bytes} bytes")
    if process.returncode != 0:
        raise LaneFailure("server_error", f"the command exited with status {process.returncode}")
    text = output.decode("utf-8", "replace").strip()
    if not text:
        raise LaneFailure("bad_response", "the command printed nothing")
    return text
