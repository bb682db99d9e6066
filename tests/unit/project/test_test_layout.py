"""The tests help themselves: what two tests share lives in tests/support/, never
in a test module another one imports, and tmux is driven from one place.

- No module under tests/ (nor a benchmark) imports a test module (tests/**/test_*.py),
  at the top or inside a function: a test module holds tests, and a helper or a
  fixture several of them use goes to tests/support/ (a conftest.py may expose a
  fixture from there).
- What a module under tests/ imports from the `tests` package comes from
  tests.support.
- Only tests/support/tmux.py runs tmux; every tmux test drives its `Terminal`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.support.paths import REPO, TESTS

TMUX_DRIVER = "tests/support/tmux.py"


def python_files() -> Iterator[Path]:
    yield from sorted(TESTS.rglob("*.py"))
    yield from sorted((REPO / "benchmarks").glob("*.py"))


def package_of(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])


def imported(source: str, package: str, members: bool = True) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every import, anywhere in the module: for `from a import b`
    `a`, and `a.b` too with `members` (b may be a module)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            yield node.lineno, base
            for alias in node.names if members else ():
                yield node.lineno, f"{base}.{alias.name}"


def is_test_module(name: str) -> bool:
    return name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")


def imports_of_test_modules(source: str, package: str) -> list[str]:
    return sorted(
        {f"{line}: {name}" for line, name in imported(source, package) if is_test_module(name)}
    )


def outside_support(source: str, package: str) -> list[str]:
    found = set()
    for line, name in imported(source, package, members=False):
        if name.startswith("tests.") and not name.startswith("tests.support"):
            found.add(f"{line}: {name}")
    return sorted(found)


def runs_tmux(source: str) -> list[int]:
    """Lines that run tmux: an argv list or tuple starting with "tmux", or a shell
    command string starting with "tmux " handed to a call."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            if (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and first.value.rsplit("/", 1)[-1] == "tmux"
            ):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            for arg in node.args:
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and arg.value.partition(" ")[0] == "tmux"
                    and arg.value.strip() != "tmux"  # shutil.which("tmux") runs nothing
                ):
                    lines.append(node.lineno)
    return sorted(set(lines))


def where(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


def test_no_module_imports_a_test_module() -> None:
    found = [
        f"{where(path)}:{hit}"
        for path in python_files()
        for hit in imports_of_test_modules(path.read_text(encoding="utf-8"), package_of(path))
    ]
    assert not found, "move what they share to tests/support/:\n" + "\n".join(found)


def test_what_tests_share_comes_from_tests_support() -> None:
    found = [
        f"{where(path)}:{hit}"
        for path in sorted(TESTS.rglob("*.py"))
        for hit in outside_support(path.read_text(encoding="utf-8"), package_of(path))
    ]
    assert not found, "\n".join(found)


def test_only_the_tmux_driver_runs_tmux() -> None:
    running = {
        where(path): lines
        for path in sorted(TESTS.rglob("*.py"))
        if (lines := runs_tmux(path.read_text(encoding="utf-8")))
    }
    assert TMUX_DRIVER in running, "the driver no longer runs tmux: teach runs_tmux its way"
    others = {name: lines for name, lines in running.items() if name != TMUX_DRIVER}
    assert not others, f"drive tmux through tests.support.tmux.Terminal: {others}"


def test_the_checks_see_what_they_look_for() -> None:
    source = (
        "from tests.integration.ui.test_ui_chat import chat_ready\n"
        "from tests.support.pilot import wait_idle\n"
        "def f():\n"
        "    from tests.e2e.tmux import test_tmux_newt\n"
        "    from .test_neighbour import helper\n"
        "    import tests.unit.agent.test_agent_loop as loop\n"
    )
    assert imports_of_test_modules(source, "tests.unit.agent") == [
        "1: tests.integration.ui.test_ui_chat",
        "4: tests.e2e.tmux.test_tmux_newt",
        "5: tests.unit.agent.test_neighbour",
        "6: tests.unit.agent.test_agent_loop",
    ]
    assert outside_support("from tests.mcp_servers import DEMO_SERVER\n", "tests.unit") == [
        "1: tests.mcp_servers"
    ]
    tmux = (
        'subprocess.run(["tmux", "send-keys", "-t", name, "Enter"])\n'
        'subprocess.run(("/usr/bin/tmux", "kill-server"))\n'
        'os.system("tmux kill-server")\n'
        'shutil.which("tmux")\n'
    )
    assert runs_tmux(tmux) == [1, 2, 3]
