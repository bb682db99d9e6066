"""Files and directories that only their owner can read, whatever the umask.

Conversations, notes and settings are private: a directory newt creates is
0700 and a file it creates is 0600, even under the usual umask 022 that would
make them readable by everyone on a shared machine. A directory or file that
already exists keeps the mode its owner chose: newt never loosens or tightens
what someone set on purpose.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def ensure_private_dir(path: Path) -> None:
    """Create `path` 0700 if it is missing (its missing parents get the usual mode).

    The parents are ordinary places such as ~/.local/share; only newt's own
    directory needs to be closed.
    """
    if path.is_dir():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.mkdir(path, PRIVATE_DIR)
    except FileExistsError:
        return  # made just now by another newt (with this same code) or by the user
    os.chmod(path, PRIVATE_DIR)  # mkdir's mode passes through the umask; this does not


def create_private_file(path: Path) -> bool:
    """Create an empty `path` 0600 unless it exists; True when this call created it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)
    return True


def write_private(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically: readers see the old or the new content.

    A new file is 0600; an existing one keeps its mode. A symlink is followed,
    so a config file kept elsewhere (e.g. in a dotfiles repository) stays there.
    """
    path = Path(os.path.realpath(path))
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = PRIVATE_FILE
    # mkstemp: a new name, created 0600 with O_EXCL (never follows a planted link)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
