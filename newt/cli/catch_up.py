"""`newt --catch-up-vectors`: the detached child that embeds what is still without a vector.

Spawned by `spawn_vector_writer` (newt/cli/detached_writers.py) after a
print-mode turn or an import left records unembedded; one per database, by its
pid file, so recall by meaning works for scripts too.
"""

from __future__ import annotations

from newt.cli.bounded_exit import close_within
from newt.cli.detached_writers import vector_pid_file
from newt.config import Config
from newt.pid_claim import PidClaim
from newt.recall.service import RecallParts
from newt.store import Store

# How long a detached vector writer may work before it leaves the rest to the next.
VECTOR_WRITER_S = 1800.0


async def catch_up_vectors(config: Config, timeout: float = VECTOR_WRITER_S) -> int:
    """`newt --catch-up-vectors`: embed every record still without a vector
    (at most `timeout` seconds), then exit; nothing when another writer is
    at it."""
    assert config.db_path is not None
    claim = PidClaim.take(vector_pid_file(config.db_path))
    if claim is None:
        return 0
    try:
        async with await Store.open(config.db_path) as store:
            parts = RecallParts(store, config, config.backend.base_url, config.backend.model)
            try:
                await parts.catch_up(timeout)
            finally:
                await close_within(parts.aclose())
    finally:
        claim.release()
    return 0
