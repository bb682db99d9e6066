"""A compaction record without the words of forgotten messages.

When the user forgets a message, a record that quotes it must not bring it
back. The owed part quotes the user's messages line by line ("- <words>", cut
at their end): a line that starts a forgotten message is removed, and the
record is *rewritten*. A model-written summary may quote anywhere: when it
holds a run of a forgotten message's words (eight in a row, or the whole of a
shorter message), the summary is *dropped* for a line saying so, and the owed
part (if any) stays. Why: a paraphrase cannot be told from a summary of
other turns, but verbatim words can, and those are what "gone" must cover.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from newt.memory.compaction import format_record, owed_part_start, record_summary

DROPPED_SUMMARY = (
    "An earlier summary was removed here: it quoted a message the user asked to forget."
)
RUN_WORDS = 8
"""Words in a row of a forgotten message that mark a summary as quoting it."""
SHORT_MESSAGE_CHARS = 12
"""A shorter message is too common to be taken for a quote."""
LINE_HEAD_CHARS = 24
"""How much of an owed line must start a forgotten message."""

Change = Literal["rewritten", "dropped"]


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def _quotes_in_prose(prose: str, old: str) -> bool:
    words = old.split()
    text = _norm(prose)
    if len(words) <= RUN_WORDS:
        whole = " ".join(words)
        return len(whole) >= SHORT_MESSAGE_CHARS and whole in text
    return any(
        " ".join(words[i : i + RUN_WORDS]) in text for i in range(len(words) - RUN_WORDS + 1)
    )


def _quotes_line(line: str, olds: Sequence[str]) -> bool:
    if not line.startswith("- "):
        return False
    head = _norm(line[2:]).rstrip("…").rstrip()[:LINE_HEAD_CHARS]
    return bool(head) and any(old.startswith(head) for old in olds)


def forget_quotes(record: str, forgotten: Sequence[str]) -> tuple[str, str, Change] | None:
    """(new record, its summary text, what changed) when `record` quotes one
    of the `forgotten` messages; None when it quotes none."""
    olds = [_norm(o) for o in forgotten if o.strip()]
    if not olds:
        return None
    body = record_summary(record)
    start = owed_part_start(body)
    prose, owed = (body[:start].rstrip(), body[start:]) if start is not None else (body, "")
    change: Change | None = None
    if prose and prose != DROPPED_SUMMARY and any(_quotes_in_prose(prose, o) for o in olds):
        prose, change = DROPPED_SUMMARY, "dropped"
    if owed:
        lines = owed.split("\n")
        kept = [lines[0], *(line for line in lines[1:] if not _quotes_line(line, olds))]
        if len(kept) != len(lines):
            owed = "\n".join(kept)
            change = change or "rewritten"
    if change is None:
        return None
    new_body = f"{prose}\n\n{owed}" if prose and owed else (prose or owed)
    return format_record(new_body), new_body, change
