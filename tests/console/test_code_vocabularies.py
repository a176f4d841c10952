"""The two vocabularies beside the API's error codes (tests/console/test_error_codes.py):
the voice agent's WebSocket error events and close codes (agent_app/codes.py) and the
tool errors given back to the model (console/tool_codes.py). Each is declared once:
every declared code is documented in docs/api.md (the agent's with its close), every
documented one is declared, every declared one is used, and no code is written inline
where an error event, a refusal, a close or a tool error is made."""
import ast
import re
from pathlib import Path

from agent_app import codes as agent_codes
from console import tool_codes

ROOT = Path(__file__).resolve().parents[2]
API_DOCS = (ROOT / "docs" / "api.md").read_text()


def _constants(module: object) -> dict[str, object]:
    return {name: value for name, value in vars(module).items() if name.isupper() and isinstance(value, (str, int))}


def _sources(package: str, declared_in: str) -> dict[str, ast.Module]:
    """The package's modules but the vocabulary's own and the migrations, parsed."""
    return {str(path.relative_to(ROOT)): ast.parse(path.read_text(), str(path))
            for path in sorted((ROOT / package).rglob("*.py"))
            if path.name != declared_in and "migrations" not in path.parts}


def _names_used(trees: dict[str, ast.Module]) -> set[str]:
    """Every name a module refers to: `codes.X`, `X`, `from … import X`."""
    used = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                used.add(node.attr)
            elif isinstance(node, ast.Name):
                used.add(node.id)
            elif isinstance(node, ast.ImportFrom):
                used.update(alias.name for alias in node.names)
    return used


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _dict_literal(node: ast.Dict) -> dict[object, ast.expr]:
    return {key.value: value for key, value in zip(node.keys, node.values, strict=True)
            if isinstance(key, ast.Constant)}


def _is_literal(node: ast.expr | None, kind: type) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, kind) and not isinstance(node.value, bool)


def _in_order(places: list[str]) -> list[str]:
    return sorted(places, key=lambda place: (place.rpartition(":")[0], int(place.rpartition(":")[2])))


def inline_agent_codes(trees: dict[str, ast.Module]) -> list[str]:
    """Where an error event's code or a close code is a literal: `refuse("…", …)`,
    `{"type": "error", "code": "…"}`, `close(4400)`, `end(4500)`."""
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args:
                name = _called(node)
                if name == "refuse" and _is_literal(node.args[0], str) or (
                        name in ("close", "_end", "end") and _is_literal(node.args[0], int)):
                    found.append(f"{path}:{node.lineno}")
            elif isinstance(node, ast.Dict):
                fields = _dict_literal(node)
                type_ = fields.get("type")
                if (isinstance(type_, ast.Constant) and type_.value == "error"
                        and _is_literal(fields.get("code"), str)):
                    found.append(f"{path}:{node.lineno}")
    return _in_order(found)


def inline_tool_codes(trees: dict[str, ast.Module]) -> list[str]:
    """Where a tool error's code is a literal: `_error(tool, "…", message)`, a built-in
    tool's `ToolRefused("…", message)` or a dict literal with `"ok": False` and a literal
    `"error"`."""
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called(node) == "_error" and len(node.args) > 1:
                if _is_literal(node.args[1], str):
                    found.append(f"{path}:{node.lineno}")
            elif isinstance(node, ast.Call) and _called(node) == "ToolRefused" and node.args:
                if _is_literal(node.args[0], str):
                    found.append(f"{path}:{node.lineno}")
            elif isinstance(node, ast.Dict):
                fields = _dict_literal(node)
                ok = fields.get("ok")
                if isinstance(ok, ast.Constant) and ok.value is False and _is_literal(fields.get("error"), str):
                    found.append(f"{path}:{node.lineno}")
    return _in_order(found)


def documented_agent_errors() -> dict[str, int]:
    """{code: close} of the table under `/v1/agent`'s "Errors" in docs/api.md."""
    section = API_DOCS.partition('Errors: `{"type": "error", "code", "message"}`')[2].partition("\n### ")[0]
    return {match[1]: int(match[2]) for match in re.finditer(r"^\| `([a-z_]+)`[^|]* \| (\d{4}) \|", section, re.M)}


# Where tool errors are made: the dispatch (tools_app) and the apps that declare built-in
# tools (console.assistants.builtin_tools).
# ... and a test call's sandbox (agent_app.scenario_runs: `no_stub`).
TOOL_ERROR_MAKERS = ("tools_app", "calls_app", "campaigns_app", "knowledge_app", "messaging_app", "console",
                     "calendars_app", "agent_app")


def _tool_error_sources() -> dict[str, ast.Module]:
    return {path: tree for package in TOOL_ERROR_MAKERS for path, tree in _sources(package, "tool_codes.py").items()}


def documented_tool_errors() -> set[str]:
    section = API_DOCS.partition("**Tool errors**")[2].partition("\n### ")[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M))


# --- the voice agent's error events and closes ------------------------------------------

def test_every_agent_error_is_documented_with_its_close() -> None:
    assert documented_agent_errors() == agent_codes.CLOSES


def test_every_agent_error_has_a_close_and_every_close_a_use() -> None:
    declared = _constants(agent_codes)
    errors = {name: value for name, value in declared.items() if not name.startswith("CLOSE_")}
    closes = {name: value for name, value in declared.items() if name.startswith("CLOSE_")}
    assert set(agent_codes.CLOSES) == set(errors.values())
    assert len(set(closes.values())) == len(closes)  # no close code twice under two names
    assert all(4000 <= close <= 4999 for close in agent_codes.CLOSES.values())
    assert set(closes.values()) == {*agent_codes.CLOSES.values(), agent_codes.CLOSE_NORMAL}


def test_every_agent_code_is_used() -> None:
    used = _names_used(_sources("agent_app", "codes.py"))
    errors = [name for name in _constants(agent_codes) if not name.startswith("CLOSE_")]
    assert not [name for name in errors if name not in used]
    assert {"CLOSES", "CLOSE_NORMAL", "CLOSE_FAILED", "CLOSE_PROTOCOL"} <= used


def test_no_agent_code_is_written_inline() -> None:
    assert inline_agent_codes(_sources("agent_app", "codes.py")) == []


def test_the_agent_check_finds_a_code_written_inline() -> None:
    source = {"x.py": ast.parse(
        'async def f(c):\n'
        '    await c.refuse("grant_ended", "over")\n'
        '    await c.send_event({"type": "error", "code": "idle_timeout", "message": "m"})\n'
        '    await c.close(4401)\n'
        '    await c.refuse(codes.GRANT_ENDED, "over")\n'
        '    await c.close(CLOSE_NORMAL)\n')}
    assert inline_agent_codes(source) == ["x.py:2", "x.py:3", "x.py:4"]


# --- tool errors -------------------------------------------------------------------------

def test_every_tool_error_is_documented_and_nothing_else() -> None:
    assert documented_tool_errors() == set(_constants(tool_codes).values())


def test_every_tool_error_is_used() -> None:
    used = _names_used(_tool_error_sources())
    assert not [name for name in _constants(tool_codes) if name not in used]


def test_no_tool_error_is_written_inline() -> None:
    assert inline_tool_codes(_tool_error_sources()) == []
    assert inline_tool_codes(_sources("agent_app", "codes.py")) == []


def test_the_tool_check_finds_a_code_written_inline() -> None:
    source = {"x.py": ast.parse(
        'def f(n):\n'
        '    a = _error(n, "unknown_tool", "no such tool")\n'
        '    b = {"ok": False, "tool": n, "error": "timeout", "message": "m"}\n'
        '    return _error(n, codes.UNKNOWN_TOOL, "no such tool"), {"ok": True, "error": "x"}\n'
        'def g():\n'
        '    raise ToolRefused("transfer_refused", "m")\n'
        'def h():\n'
        '    raise ToolRefused(codes.TRANSFER_REFUSED, "m")\n')}
    assert inline_tool_codes(source) == ["x.py:2", "x.py:3", "x.py:6"]
