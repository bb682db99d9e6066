"""From the store's durable log to the turns a provider restores."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from newt.memory.types import ConversationTurn
from newt.store.live_log import live_rows
from newt.store.models import StoredTurn

# A pending turn never got a reply and a failed one has none: neither was
# ever part of a working set, so neither is restored.
_RESTORED_STATUSES = frozenset({"complete", "interrupted"})


def conversation_turns_from_log(
    stored: Sequence[StoredTurn], excluded: Collection[int] = ()
) -> list[ConversationTurn]:
    """Compaction rows become record turns (with resident_turns/used_after);
    complete and interrupted turns become turns; pending and failed are skipped,
    and so are replaced turns and `excluded` ones (a regenerate in flight)."""
    turns: list[ConversationTurn] = []
    for row in live_rows(stored, excluded):
        if row.kind == "compaction":
            turns.append(
                ConversationTurn(
                    user=row.user,
                    assistant="",
                    resident_turns=row.resident_turns,
                    used_after=row.used_after,
                    kind="compaction",
                )
            )
        elif row.status in _RESTORED_STATUSES:
            turns.append(
                ConversationTurn(
                    user=row.user,
                    assistant=row.assistant,
                    tokens_in=row.tokens_in,
                    tokens_out=row.tokens_out,
                    kind="turn",
                )
            )
    return turns
