"""newt finds its processes portably: by the pid files and locks it keeps
(newt/pid_claim.py), never by reading /proc by hand (Linux only: on macOS
nothing would be found). The one /proc file read is the machine's memory,
with os.sysconf beside it."""

from __future__ import annotations

import re

from tests.support.paths import REPO

PROC = re.compile(r"/proc/(?!meminfo\b)")


def test_no_module_reads_proc_by_hand() -> None:
    found = [
        f"{path.relative_to(REPO).as_posix()}:{n}: {line.strip()}"
        for path in sorted((REPO / "newt").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PROC.search(line)
    ]
    assert not found, "\n".join(found)


def test_the_check_sees_a_proc_read() -> None:
    assert PROC.search('Path(f"/proc/{pid}/cmdline")')
    assert not PROC.search('Path("/proc/meminfo")')
