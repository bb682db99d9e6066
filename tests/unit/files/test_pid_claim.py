"""A pid file held by a lock names the live process at a job, and no one else."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from newt.pid_claim import PidClaim, holder

HOLD = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from newt.pid_claim import PidClaim\n"
    "claim = PidClaim.take(Path(sys.argv[1]))\n"
    "print('held' if claim else 'refused', flush=True)\n"
    "time.sleep(60)\n"
)


def _hold(path: Path) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


def test_a_live_holder_is_found_and_its_claim_refused_to_others(tmp_path: Path) -> None:
    path = tmp_path / "job.pid"
    child = _hold(path)
    try:
        assert holder(path) == child.pid
        assert PidClaim.take(path, wait_s=0.05) is None
        assert oct(path.stat().st_mode & 0o777) == "0o600"
    finally:
        child.kill()
        child.wait()
    # its lock died with it: the file still names it, and it counts for nothing
    assert path.read_text().strip() == str(child.pid)
    assert holder(path) is None
    claim = PidClaim.take(path)
    assert claim is not None and holder(path) == os.getpid()
    claim.release()
    assert not path.exists()


def test_a_stale_file_naming_a_live_process_names_no_one(tmp_path: Path) -> None:
    path = tmp_path / "job.pid"
    path.write_text(str(os.getpid()))  # this process, which holds no claim
    assert holder(path) is None
    assert holder(tmp_path / "none.pid") is None


def test_a_claim_let_go_is_free_at_once(tmp_path: Path) -> None:
    path = tmp_path / "job.pid"
    first = PidClaim.take(path)
    assert first is not None
    first.release()
    started = time.monotonic()
    second = PidClaim.take(path)
    assert second is not None and time.monotonic() - started < 1
    second.release()
