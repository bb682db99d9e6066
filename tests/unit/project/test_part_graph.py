"""The session's parts depend one way, as docs/design.md section 2 draws them.

The graph there (a fenced `parts` block: `Part -> what it is handed`) is the
contract: each part's constructor takes at most six arguments, every argument
typed as one of newt's classes is an arrow of the graph, a part's module
imports no part that is not below it, and the graph has no cycle. The rooms of
newt/agent/ import each other one way too. Why: a part that holds the one
above it makes a web again, and a drawing nobody checks drifts.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests.support.paths import REPO

NEWT = REPO / "newt"
AGENT = NEWT / "agent"
MAX_ARGS = 6
ROOMS = ["tools", "local", "conversation", "turn", "own_memory", "session"]
"""Bottom to top: a room imports only rooms before it (agent's top-level modules are shared)."""


def drawn_graph() -> dict[str, set[str]]:
    text = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
    block = re.search(r"```parts\n(.*?)```", text, re.S)
    assert block, "docs/design.md lost its ```parts block"
    graph: dict[str, set[str]] = {}
    for line in block.group(1).splitlines():
        if "->" in line:
            part, below = line.split("->")
            graph[part.strip()] = {name.strip() for name in below.split(",") if name.strip()}
    return graph


@cache
def classes() -> dict[str, tuple[Path, ast.ClassDef]]:
    found: dict[str, tuple[Path, ast.ClassDef]] = {}
    for path in sorted(NEWT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, (path, node))
    return found


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += graph.get(name, ())
    return seen


def constructor_args(node: ast.ClassDef) -> list[ast.arg]:
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            args = item.args
            return [*args.posonlyargs, *args.args[1:], *args.kwonlyargs]
    return []


def names_in(annotation: ast.expr | None) -> set[str]:
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        annotation = ast.parse(annotation.value, mode="eval").body
    return {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}


def test_the_drawn_graph_has_no_cycle_and_names_real_classes() -> None:
    graph, known = drawn_graph(), classes()
    for part in graph:
        assert part not in reachable(graph, part), f"{part} is below itself"
    named = set(graph) | {name for below in graph.values() for name in below}
    assert not named - set(known), f"drawn but not in newt/: {sorted(named - set(known))}"


def test_every_part_takes_only_what_the_graph_hands_it() -> None:
    graph, known = drawn_graph(), classes()
    wrong = []
    for part, below in graph.items():
        node = known[part][1]
        args = constructor_args(node)
        if len(args) > MAX_ARGS:
            wrong.append(f"{part} takes {len(args)} arguments (at most {MAX_ARGS})")
        for arg in args:
            for name in names_in(arg.annotation) & set(known):
                if name not in below:
                    wrong.append(f"{part}({arg.arg}: {name}): not an arrow of the graph")
    assert not wrong, "\n".join(wrong)


def test_no_part_imports_a_part_that_is_not_below_it() -> None:
    graph, known = drawn_graph(), classes()
    parts = set(graph)  # the leaves (Config, Store, ...) are anyone's to import
    wrong = []
    for part in graph:
        path, _ = known[part]
        allowed = reachable(graph, part)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name in parts and alias.name not in allowed | {part}:
                        wrong.append(f"{path.relative_to(REPO)} imports {alias.name}")
    assert not wrong, "\n".join(wrong)


def test_the_session_makes_every_part_the_graph_draws() -> None:
    """The graph is complete: each part ChatSession builds is drawn."""
    graph = drawn_graph()
    drawn = set(graph) | {name for below in graph.values() for name in below}
    path = AGENT / "session" / "chat_session.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    init = next(
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "__init__"
    )
    made = {
        n.func.id
        for n in ast.walk(init)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id[0].isupper()
    }
    assert made and not made - drawn, f"made but not drawn: {sorted(made - drawn)}"


def test_the_rooms_of_the_agent_import_one_way() -> None:
    wrong = []
    for path in sorted(AGENT.rglob("*.py")):
        parts = path.relative_to(AGENT).parts
        if len(parts) < 2:
            continue  # the agent's shared top-level modules
        room = ROOMS.index(parts[0])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("newt.agent."):
                target = node.module.split(".")[2]  # type: ignore[union-attr]
                if target in ROOMS and ROOMS.index(target) > room:
                    wrong.append(f"{path.relative_to(REPO)} imports {node.module}")
    assert not wrong, "a room imports one above it:\n" + "\n".join(wrong)
