"""A message too large for the model's window, told before it is sent.

A 50,000-character paste used to go to the server, wait ~45 s for its
refusal, and come back as "newt compacts the conversation and retries",
which cannot help: no fold makes room for a message larger than the window.
The conversation may fill `budget` tokens of the window (the rest is kept
for the reply); a message whose estimate alone passes that cannot be sent,
so the chat screen keeps it in the box and says why, with both numbers, and
what can help; print mode says the same on stderr and sends nothing (exit 2).
A message that may not fit (its estimate past a quarter of the budget) is
counted by newt's own llama-server first (`ChatSession.count_tokens`), so
both the refusal and the size of a part that fits are the server's figures.
"""

from __future__ import annotations

from newt.agent.own_memory.status import MemoryStatus

# A message whose estimate passes this share of the budget is counted by the
# server where it can (newt.backend.tokenize): the estimate can be far off.
LARGE_SHARE = 4


def too_large(
    text: str, tokens: int, status: MemoryStatus, *, switch: str = "/model"
) -> str | None:
    """Why `text` (about `tokens` tokens) cannot be sent at all, or None when it
    fits. `switch`: how the user picks another model where they are."""
    room = status.budget
    if room <= 0 or tokens <= room:
        return None
    window = status.context_tokens or room
    part = max(1, room // 2)  # a part leaves room for the conversation and the reply
    chars = max(1, round(part * len(text) / max(1, tokens)))
    return (
        f"this message alone is about {tokens:,} tokens, larger than the model's window"
        f" of {window:,} tokens ({room:,} for the conversation, the rest kept for the"
        f" reply). What can help: split it into parts of about {part:,} tokens"
        f" ({chars:,} characters) and send them one at a time; or a model with a larger"
        f" window ({switch})."
    )
