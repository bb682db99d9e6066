"""The core never imports textual (docs/design.md section 1)."""

from __future__ import annotations

import subprocess
import sys

CORE = [
    "newt.agent.session.chat_session",
    "newt.cli.print_mode",
    "newt.memory",
    "newt.recall",
    "newt.backend",
    "newt.store",
    "newt.config",
    "newt.cli.main",
]


def test_core_does_not_import_textual() -> None:
    code = (
        "import sys, importlib\n"
        f"for name in {CORE!r}:\n"
        "    importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "assert not bad, bad[:5]\n"
        "print('clean')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "clean"
