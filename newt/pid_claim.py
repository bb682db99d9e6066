"""A pid file held by a lock: which live process is at a job, on any POSIX system.

`PidClaim.take(path)` writes this process's pid to `path` and holds an
exclusive `flock` on it until `release()` (or the process's end);
`holder(path)` is the pid of the live process holding it, else None. Why: a
pid file alone can name a process long gone, or a stranger that reused its
pid, and telling them apart by reading a command line needs /proc (Linux
only); a lock dies with its process. Without flock (Windows) a claim always
succeeds and nothing is found holding one.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

try:
    import fcntl as _fcntl
except ImportError:  # Windows: no flock
    _fcntl = None  # type: ignore[assignment]

_RETRY_S = 0.01  # a reader holds the lock for a moment only


class PidClaim:
    def __init__(self, path: Path, fd: int | None) -> None:
        self.path = path
        self._fd = fd

    @classmethod
    def take(cls, path: Path, wait_s: float = 0.2) -> PidClaim | None:
        """Claim `path` for this process, waiting up to `wait_s` for a holder
        to let go; None when another live process holds it."""
        if _fcntl is None:
            path.write_text(f"{os.getpid()}\n", encoding="ascii")
            return cls(path, None)
        deadline = time.monotonic() + wait_s
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                _fcntl.flock(fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    return None
                time.sleep(_RETRY_S)
                continue
            if _same_file(path, fd):
                os.ftruncate(fd, 0)
                os.write(fd, f"{os.getpid()}\n".encode("ascii"))
                return cls(path, fd)
            os.close(fd)  # its holder removed the file as it let go: claim a fresh one

    def release(self) -> None:
        """Let go and remove the file (if it is still this claim's)."""
        fd, self._fd = self._fd, None
        if fd is None:
            with contextlib.suppress(OSError):
                if self.path.read_text(encoding="ascii").strip() == str(os.getpid()):
                    self.path.unlink()
            return
        with contextlib.suppress(OSError):
            if _same_file(self.path, fd):
                self.path.unlink()
        os.close(fd)


def holder(path: Path) -> int | None:
    """The pid of the live process holding a claim on `path`, else None."""
    if _fcntl is None:
        return None
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            _fcntl.flock(fd, _fcntl.LOCK_SH | _fcntl.LOCK_NB)
        except BlockingIOError:
            for _ in range(20):  # a claim just taken writes its pid next
                text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
                if text.isdigit():
                    return int(text)
                time.sleep(_RETRY_S)
            return None
        _fcntl.flock(fd, _fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _same_file(path: Path, fd: int) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False
