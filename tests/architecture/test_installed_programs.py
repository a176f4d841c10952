"""Every program the product, the tests and the benchmarks run is installed by the
Makefile (issue 34): `make test` on a fresh Debian machine must not depend on a program
someone once installed by hand.

The commands are collected from the source, not listed by hand: the literal first word of
every `subprocess` call, `asyncio.create_subprocess_exec`, `os.exec*` and `shutil.which`
(a list held in a variable of the same module counts too), the project's own scripts they
run (`bash .ci/redis …` → the packages that script installs with `.ci/apt-ensure`), and
the programs, libraries and files used without such a call (Playwright's Chromium, the
eSpeak NG library that pyttsx3 loads, the word list). `dpkg -S` says which Debian package
provides each; the package must be in the list of the Makefile target that runs that
code: SYSTEM_PACKAGES for the product, TEST_SYSTEM_PACKAGES for the tests (which include
the benchmarks' list: a smoke test runs every benchmark), BENCH_SYSTEM_PACKAGES for
`make bench`.
"""
import ast
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from scripts_app.analysis.lexicon import DEFAULT_WORDLIST
from tests.browser import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "Makefile"
LISTS = ("SYSTEM_PACKAGES", "TEST_SYSTEM_PACKAGES", "BENCH_SYSTEM_PACKAGES")
# Which lists are installed before each kind of code runs (the Makefile's targets).
INSTALLED_FOR = {"product": ("SYSTEM_PACKAGES",), "tests": ("SYSTEM_PACKAGES", "TEST_SYSTEM_PACKAGES"),
                 "bench": ("SYSTEM_PACKAGES", "BENCH_SYSTEM_PACKAGES")}
SKIPPED_DIRS = {".venv", "node_modules", "staticfiles", "media", "var", "__pycache__", ".git", "migrations"}
# What runs `make test` is there before it: make itself (and the shell of every
# Debian system, an Essential package, is accepted by dpkg's own mark).
PRESENT_BEFORE_MAKE = {"make"}
# Used without a subprocess call of ours, so no scan finds them: (what, kind, why).
USED_WITHOUT_A_CALL = [
    (CHROMIUM, "tests", "Playwright's browser (tests/browser.py)"),
    ("libespeak-ng.so.1", "product", "the library pyttsx3 loads to speak (speech_app/tts.py)"),
    (DEFAULT_WORDLIST, "product", "the script linter's German word list (scripts_app/analysis/lexicon.py)"),
]
_SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output", "create_subprocess_exec",
                     "execv", "execvp", "execvpe", "execl", "execlp", "spawnlp", "spawnvp"}
_MAY_RUN = re.compile(r"subprocess|shutil|\bos\.(exec|spawn)")
_APT_ENSURE = re.compile(r"apt-ensure\"?\s+([a-z0-9][a-z0-9 .+-]*)")


@dataclass(frozen=True)
class Use:
    program: str  # a command name or an absolute path
    kind: str  # "product", "tests" or "bench"
    where: str


def kind_of(path: Path) -> str:
    top = path.relative_to(ROOT).parts[0]
    return {"tests": "tests", "bench": "bench"}.get(top, "product")


def python_files() -> list[Path]:
    found = []
    for directory, names, files in os.walk(ROOT):
        names[:] = [name for name in names if name not in SKIPPED_DIRS and not name.startswith(".")]
        found += [Path(directory) / name for name in files if name.endswith(".py")]
    return sorted(found)


def _list_literals(tree: ast.Module) -> dict[str, ast.expr]:
    """Names assigned a list or tuple literal anywhere in the module (`command = ["wrk", …]`)."""
    assigned: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List | ast.Tuple):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = node.value
    return assigned


def _first_word(argument: ast.expr, lists: dict[str, ast.expr]) -> str | None:
    if isinstance(argument, ast.BinOp):  # command + [url]
        return _first_word(argument.left, lists)
    if isinstance(argument, ast.Name) and argument.id in lists:
        argument = lists[argument.id]
    if isinstance(argument, ast.List | ast.Tuple) and argument.elts:
        argument = argument.elts[0]
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return argument.value
    return None  # sys.executable, a configured command: not a system package's program


def _second_word(argument: ast.expr, lists: dict[str, ast.expr]) -> str | None:
    if isinstance(argument, ast.BinOp):
        return _second_word(argument.left, lists)
    if isinstance(argument, ast.Name) and argument.id in lists:
        argument = lists[argument.id]
    if isinstance(argument, ast.List | ast.Tuple) and len(argument.elts) > 1:
        word = argument.elts[1]
        if isinstance(word, ast.Constant) and isinstance(word.value, str):
            return word.value
    return None


def commands_in(path: Path) -> list[tuple[str, str | None, int]]:
    """(first word, second word, line) of every command `path` runs or looks up."""
    text = path.read_text(encoding="utf-8")
    if not _MAY_RUN.search(text):  # most modules run nothing: not parsed (the test stays fast)
        return []
    tree = ast.parse(text, str(path))
    lists = _list_literals(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not node.args or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value.id if isinstance(node.func.value, ast.Name) else None
        name = node.func.attr
        if (owner in ("subprocess", "asyncio", "os") and name in _SUBPROCESS_CALLS) or (owner, name) == (
                "shutil", "which"):
            word = _first_word(node.args[0], lists)
            if word is not None:
                found.append((word, _second_word(node.args[0], lists), node.lineno))
    return found


def used_programs() -> list[Use]:
    uses = [Use(what, kind, why) for what, kind, why in USED_WITHOUT_A_CALL]
    for path in python_files():
        for word, second, line in commands_in(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            uses.append(Use(word, kind_of(path), where))
            if word == "bash" and second and (ROOT / second).is_file():  # a script of ours
                uses += [Use(f"package:{package}", kind_of(path), f"{where} ({second})")
                         for package in script_packages(ROOT / second)]
    return uses


def script_packages(script: Path) -> list[str]:
    """The Debian packages a shell script of ours installs with .ci/apt-ensure."""
    return [package for match in _APT_ENSURE.finditer(script.read_text()) for package in match.group(1).split()]


def makefile_lists(text: str) -> dict[str, set[str]]:
    """The Makefile's package lists, $(OTHER_LIST) references expanded."""
    raw = dict(re.findall(r"^([A-Z_]+)\s*:=\s*(.*)$", text, re.MULTILINE))

    def expand(value: str) -> set[str]:
        packages = set()
        for word in value.split():
            reference = re.fullmatch(r"\$\(([A-Z_]+)\)", word)
            packages |= expand(raw[reference.group(1)]) if reference else {word}
        return packages

    return {name: expand(raw[name]) for name in LISTS if name in raw}


def _candidates(program: str) -> list[str]:
    """The paths (or, for a library, the file name) dpkg may know `program` by."""
    if "/" not in program and not program.startswith("lib"):
        located = shutil.which(program)
        if located is None:
            return []
        program = located
    if not program.startswith("/"):
        return [program]
    if not os.path.exists(program):
        return []
    # With a merged /usr, dpkg knows /bin/bash where `which` says /usr/bin/bash.
    return list(dict.fromkeys([program, os.path.realpath(program), program.removeprefix("/usr")]))


def packages_of(programs: set[str]) -> dict[str, str | None]:
    """The Debian package that provides each program (a command, an absolute path, a
    library's file name or `package:NAME`), or None when no installed package does. One
    dpkg-query for all of them: each call reads dpkg's whole file database."""
    wanted = {program: _candidates(program) for program in programs if not program.startswith("package:")}
    patterns = sorted({path for paths in wanted.values() for path in paths})
    owners: dict[str, str] = {}
    if patterns:
        done = subprocess.run(["dpkg-query", "-S", *patterns], capture_output=True, text=True, timeout=60)
        # "libespeak-ng1:amd64: /usr/lib/…/libespeak-ng.so.1" (diversion lines skipped).
        for line in done.stdout.splitlines():
            if ": " in line and not line.startswith("diversion"):
                package, path = line.split(": ", 1)
                owners.setdefault(path, package.split(",")[0].split(":")[0].strip())
    found: dict[str, str | None] = {}
    for program in programs:
        if program.startswith("package:"):
            package = program.removeprefix("package:")
            found[program] = package if _installed(package) else None
            continue
        matches = [owner for candidate in wanted[program] for path, owner in owners.items()
                   if path == candidate or (not candidate.startswith("/") and path.endswith("/" + candidate))]
        found[program] = matches[0] if matches else None
    return found


def _installed(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() == "install ok installed"


def _essential(package: str) -> bool:
    done = subprocess.run(["dpkg-query", "-W", "-f=${Essential}", package], capture_output=True, text=True,
                          timeout=30)
    return done.stdout.strip() == "yes"


pytestmark = pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="not a Debian system (no dpkg-query)")


def test_every_program_the_code_runs_is_installed_by_the_makefile() -> None:
    lists = makefile_lists(MAKEFILE.read_text())
    assert set(lists) == set(LISTS), f"the Makefile lost a package list: {sorted(set(LISTS) - set(lists))}"
    # The tests run every benchmark (tests/bench/test_smoke.py), so what bench runs, they run.
    assert lists["BENCH_SYSTEM_PACKAGES"] <= lists["TEST_SYSTEM_PACKAGES"]
    uses = used_programs()
    owners, problems = packages_of({use.program for use in uses}), []
    for use in uses:
        package = owners[use.program]
        allowed = set().union(*(lists[name] for name in INSTALLED_FOR[use.kind]))
        if package is None:
            problems.append(f"{use.program} ({use.where}) is not installed from a Debian package on this machine: "
                            f"the Makefile installs {' and '.join(INSTALLED_FOR[use.kind])} before this code "
                            "runs; add the package that provides it there (and run make)")
        elif package not in allowed and package not in PRESENT_BEFORE_MAKE and not _essential(package):
            problems.append(f"{use.program} ({use.where}) comes from the Debian package {package}, which is not in "
                            f"{' / '.join(INSTALLED_FOR[use.kind])} of the Makefile")
    assert not problems, "\n".join(problems)


def test_the_scan_finds_the_commands_written_in_each_form(tmp_path: Path) -> None:
    """The forms the scan must see, each in a module of its own: a literal list, a list
    held in a variable and extended, shutil.which, asyncio's exec, a script of ours."""
    source = tmp_path / "example.py"
    source.write_text(
        "import asyncio, shutil, subprocess, sys\n"
        "subprocess.run(['sox', 'in.wav', 'out.wav'])\n"
        "command = ['ffmpeg', '-i']\n"
        "subprocess.Popen(command + ['x'])\n"
        "shutil.which('lame')\n"
        "asyncio.create_subprocess_exec('opusenc', 'a')\n"
        "subprocess.run([sys.executable, '-c', 'pass'])\n"
        "subprocess.run(['bash', '.ci/redis', 'start'])\n")
    assert [(word, line) for word, _second, line in commands_in(source)] == [
        ("sox", 2), ("ffmpeg", 4), ("lame", 5), ("opusenc", 6), ("bash", 8)]
    assert script_packages(ROOT / ".ci" / "redis") == ["redis-server"]


def test_a_program_nothing_installs_is_named() -> None:
    missing = {"no-such-program-of-stimmwerk", "/usr/bin/no-such-program-of-stimmwerk",
               "package:no-such-package-of-stimmwerk"}
    assert packages_of(missing | {"dpkg-query"}) == {**dict.fromkeys(missing), "dpkg-query": "dpkg"}


def test_the_makefile_lists_are_read_with_their_references() -> None:
    lists = makefile_lists("SYSTEM_PACKAGES := a b\nBENCH_SYSTEM_PACKAGES := c\n"
                           "TEST_SYSTEM_PACKAGES := d $(BENCH_SYSTEM_PACKAGES)\n")
    assert lists == {"SYSTEM_PACKAGES": {"a", "b"}, "BENCH_SYSTEM_PACKAGES": {"c"},
                     "TEST_SYSTEM_PACKAGES": {"c", "d"}}

