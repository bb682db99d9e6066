"""Start an MCP stdio server so that it dies with newt (Linux).

newt runs `python -I -S launch.py PARENT_PID COMMAND ARGS...`; this asks the
kernel to send SIGTERM to us when our parent dies (prctl PR_SET_PDEATHSIG,
which survives exec), then execs the server in place. So even when newt is
killed with SIGKILL, a stdio server it started does not outlive it. A clean
exit or Ctrl-C never needs this: the SDK closes the server's stdin and then
stops its process group. Standard library only, and no site packages (-S),
so it adds only a bare interpreter start before the server's own.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: launch.py PARENT_PID COMMAND [ARGS...]\n")
        return 2
    parent, command, args = int(argv[0]), argv[1], argv[2:]
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the stdin-close path still stops it
        pass
    if os.getppid() != parent:  # newt died before the request above took effect
        return 1
    try:
        os.execvp(command, [command, *args])
    except OSError as exc:
        sys.stderr.write(f"cannot start {command!r}: {exc.strerror}\n")
        return 127
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
