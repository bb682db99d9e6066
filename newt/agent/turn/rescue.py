"""Last resort for a reply the database would not take.

If storing a finished turn fails even after retries, the streamed reply must
not vanish: it is written to a private file beside the database and the user
is told where.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def save_unsaved_reply(db_path: Path, turn_id: int, user: str, reply: str) -> Path | None:
    """Write the turn to `<db dir>/unsaved/turn-<id>-<time>.md` (mode 0600); None if
    even that fails or the database is in memory."""
    if str(db_path) == ":memory:":
        return None
    folder = Path(db_path).parent / "unsaved"
    path = folder / f"turn-{turn_id}-{time.strftime('%Y%m%d-%H%M%S')}.md"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(f"# Unsaved turn {turn_id}\n\n## You\n\n{user}\n\n## Reply\n\n{reply}\n")
    except OSError:
        return None
    return path
