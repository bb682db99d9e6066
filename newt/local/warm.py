"""A llama-server that stays warm between newts (`[backend] local_keep_alive`).

`newt --local`, the app's or a `-p` run's, used to load the model afresh
each time and read the whole conversation again. A warm server is run by a
detached keeper (newt.local.keeper) and found again by the next newt that
asks for the same server (same binary, model, window and arguments: the
key), which attaches to it instead of starting one. Each newt using it holds
a lease for as long as it runs; the keeper stops the server once no lease has
been held for the keep-alive time. `newt --local --stop` stops every warm
server now (`stop_servers`).

Files, in `servers/` of the llama cache (private): `<key>.json` (the keeper's
pid and the port), `<key>.lock` (taken to attach, to start, and by the
keeper to stop when idle, so a newt never attaches to a server that is
going), `<key>.users/<pid>` (the leases) and `<key>.log` (the server's
output). Processes are found by these files and signal 0, never by reading
the process table.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from newt.backend.errors import LocalServerError
from newt.backend.http import sync_client
from newt.files import ensure_private_dir, write_private
from newt.local.keeper import forget_server, live_users, locked, process_alive, read_state
from newt.local.server import LocalLlamaServer, cache_dir, find_llama_server, free_port


def servers_dir() -> Path:
    path = cache_dir() / "servers"
    ensure_private_dir(path)
    return path


def stop_servers(timeout_s: float = 10.0) -> int:
    """`newt --local --stop`: stop every warm server now; how many were running."""
    stopped = []
    for state in sorted(servers_dir().glob("*.json")):
        found = read_state(state)
        if found is None or not process_alive(found[0]) or not _answers(found[1]):
            # gone, or its pid now someone else's: its server (PR_SET_PDEATHSIG) is gone
            forget_server(state, found[0] if found else -1)
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(found[0], signal.SIGTERM)
        stopped.append(state)
    # each keeper clears its state file as it goes (its pid may linger unreaped)
    deadline = time.monotonic() + timeout_s
    while any(state.exists() for state in stopped) and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(stopped)


def _answers(port: int) -> bool:
    """Something speaks HTTP on this port of localhost (a loading server says 503)."""
    try:
        with sync_client(timeout=2.0) as http:
            http.get(f"http://127.0.0.1:{port}/health")
    except httpx.HTTPError:
        return False
    return True


class WarmLlamaServer(LocalLlamaServer):
    """A LocalLlamaServer that outlives this newt by `keep_alive_s` seconds and
    is shared with the next newt that asks for the same one. `stop()` gives up
    this newt's lease; the keeper stops the server when it is idle."""

    def __init__(self, *args: object, keep_alive_s: float, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.keep_alive_s = keep_alive_s
        self.reused = False  # attached to a server another newt started
        self.ready = False
        self._keeper: int | None = None
        self._lease: Path | None = None

    def _key(self, binary: Path) -> str:
        command = self.command(binary)
        at = command.index("--port")
        without_port = command[:at] + command[at + 2 :]
        return hashlib.sha256("\0".join(without_port).encode()).hexdigest()[:16]

    def _spawn(self) -> None:
        if self._lease is not None:
            raise LocalServerError("This llama-server is already running.")
        binary = find_llama_server(self.binary)
        if not self.model_path.is_file():
            super()._spawn()  # says what is missing
        self.port = self.port or free_port(self.host)
        key = self._key(binary)
        home = servers_dir()
        state, users = home / f"{key}.json", home / f"{key}.users"  # keeper.py's names
        self._log_path = home / f"{key}.log"
        with locked(home / f"{key}.lock"):
            found = read_state(state)
            if found is not None and self._serving(state, *found):
                self._keeper, self.port = found
                self.reused = True
            else:
                self._start_keeper(binary, state, users, home / f"{key}.lock")
            ensure_private_dir(users)
            self._lease = users / str(os.getpid())
            self._lease.touch(mode=0o600)

    def _serving(self, state: Path, keeper: int, port: int) -> bool:
        """The keeper runs and its server answers, or is still starting (a keeper
        killed outright left its state: its server went with it)."""
        if not process_alive(keeper):
            return False
        try:
            starting = time.time() - state.stat().st_mtime < self.startup_timeout_s
        except OSError:
            return False
        return starting or _answers(port)

    def _start_keeper(self, binary: Path, state: Path, users: Path, lock: Path) -> None:
        forget_server(state, -1)  # a keeper that died outright left its files
        self._log_path.unlink(missing_ok=True)  # type: ignore[union-attr]
        ensure_private_dir(users)
        keeper = subprocess.Popen(
            [sys.executable, "-m", "newt.local.keeper", "--state", str(state),
             "--log", str(self._log_path), "--lock", str(lock),
             "--keep-alive", str(self.keep_alive_s), "--", *self.command(binary)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not this terminal's: Ctrl-C here must not stop it
        )  # fmt: skip
        self.process, self._keeper = keeper, keeper.pid
        write_private(state, json.dumps({"keeper": keeper.pid, "port": self.port}))

    def _check_alive(self) -> None:
        if self._keeper is not None and not process_alive(self._keeper):
            self._fail("stopped (its keeper is gone)")
        super()._check_alive()

    def stop(self, *, now: bool = False) -> None:
        """Give up this newt's lease: the keeper stops the server once idle. It is
        stopped at once if it never became ready, or with `now` (another model
        runs in its place) when no other newt holds a lease."""
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.unlink(missing_ok=True)
        keeper, self._keeper = self._keeper, None
        unused = lease is not None and not live_users(lease.parent)
        if keeper is not None and ((not self.ready and not self.reused) or (now and unused)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(keeper, signal.SIGTERM)
        self.process = None

    def start(self) -> None:
        super().start()
        self.ready = True

    async def astart(self) -> None:
        await super().astart()
        self.ready = True
