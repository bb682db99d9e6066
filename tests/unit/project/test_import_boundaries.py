"""The layers of docs/design.md, enforced on the import statements themselves.

Every import counts: module level, inside functions and under TYPE_CHECKING,
since each is a dependency someone has to understand.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.support.paths import REPO

ROOT = REPO / "newt"
CORE = (
    "newt.agent",
    "newt.memory",
    "newt.recall",
    "newt.backend",
    "newt.store",
    "newt.mcp",
    "newt.importing",
    "newt.local",
)
# The layers below the agent never import it: the arrows run one way.
BELOW_AGENT = (
    "newt.memory",
    "newt.recall",
    "newt.backend",
    "newt.store",
    "newt.mcp",
    "newt.importing",
    "newt.local",
)
# What the UI may import of newt: the agent layer (its views, events and
# session) and the configuration (and where it lives). Never the store, recall, memory or backend.
UI_ALLOWED = ("newt.ui", "newt.agent", "newt.config", "newt.config_paths")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """Modules of newt (and top-level names of others) that `name` imports."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            for alias in node.names:  # `from newt.ui import app` imports a module
                if f"{base}.{alias.name}" in MODULES:
                    found.add(f"{base}.{alias.name}")
    return found


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_the_ui_imports_only_the_agent_and_the_config_of_newt() -> None:
    bad = {
        f"{mod} imports {imp}"
        for mod in MODULES
        if within(mod, ("newt.ui",))
        for imp in imports_of(mod)
        if within(imp, ("newt",)) and not within(imp, UI_ALLOWED)
    }
    assert not bad, sorted(bad)


def test_the_core_never_imports_the_ui_or_textual() -> None:
    bad = {
        f"{mod} imports {imp}"
        for mod in MODULES
        if within(mod, CORE)
        for imp in imports_of(mod)
        if within(imp, ("newt.ui", "textual", "rich"))
    }
    assert not bad, sorted(bad)


def test_nothing_below_the_agent_imports_it() -> None:
    bad = {
        f"{mod} imports {imp}"
        for mod in MODULES
        if within(mod, BELOW_AGENT)
        for imp in imports_of(mod)
        if within(imp, ("newt.agent", "newt.ui", "newt.cli.main"))
    }
    assert not bad, sorted(bad)


def test_the_local_setup_imports_only_itself_and_the_standard_library() -> None:
    # scripts/get_llama_server.sh runs it before newt (or any dependency) is installed
    bad = {
        f"{mod} imports {imp}"
        for mod in MODULES
        if within(mod, ("newt.local.setup",))
        for imp in imports_of(mod)
        if imp != "__future__"
        and not within(imp, ("newt.local.setup",))
        and imp.split(".")[0] not in sys.stdlib_module_names
    }
    assert not bad, sorted(bad)


def test_no_import_cycles_between_newt_modules() -> None:
    graph = {
        mod: {imp for imp in imports_of(mod) if imp in MODULES and imp != mod} for mod in MODULES
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_the_walk_sees_imports_hidden_from_the_runtime() -> None:
    # the test would be worthless if it missed TYPE_CHECKING or local imports
    assert "newt.agent.session.chat_session" in imports_of("newt.ui.app")  # a function-local import
    assert "newt.ui.commands" in imports_of("newt.ui.command_host")  # under TYPE_CHECKING


def test_only_the_entry_point_imports_the_front_ends() -> None:
    # newt/cli/ is the top of the house: the UI, the agent and below never reach up into it
    bad = {
        f"{mod} imports {imp}"
        for mod in MODULES
        if not within(mod, ("newt.cli", "newt.__main__"))
        for imp in imports_of(mod)
        if within(imp, ("newt.cli",))
    }
    assert not bad, sorted(bad)


def test_the_agent_keeps_its_concerns_in_rooms() -> None:
    # a new module joins a room (session/, turn/, tools/, own_memory/, local/) or makes one
    top = sorted(p.name for p in (ROOT / "agent").glob("*.py"))
    assert len(top) <= 15, top
