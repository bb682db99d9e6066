"""How retained evidence is shown to the model: which capsule comes first.

`retain_within_budget` decides WHAT fits (most recoverable first, DESIGN.md
section 5); this module decides the ORDER the model reads it in. A small
model leans on what it reads first (in issue 10's runs SmolLM2-135M answered
6 of 6 with the asked-for capsule first, 1 of 6 with it fourth), so capsules
are ordered by how well their record matched the question (retrieval score:
-bm25, or the fused rank score with embeddings), not by recoverability.

The block sits right before the user's message, so two orders are worth
measuring (benchmarks/memory_answers.py): the best match first (read first)
or last (closest to the question). `packed` keeps the packing order, the
behaviour before relevance ordering, as a baseline.

How each capsule reads matters as much as where it sits. Replaying the dev
set's question requests with the same capsules in other wordings (SmolLM2,
18 replies each): "- [t4] User: ...\nAssistant: ..." as before, 11 right;
plain lines saying who said it ("- The user said: ... / You replied: ..."),
16 right. A bracketed key in the line invites a small model to answer with
the key ("[t7] The best thing about...") and "User:"/"Assistant:" inside the
message reads like a transcript to continue. So each line says who said
it, and the record keys go on one line of their own after the excerpts, for
`fetch_record`, and only when the model has that tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

from newt.recall.retention import EvidenceCapsule, RetentionReport

EvidenceOrder = Literal["best_first", "best_last", "packed"]
EVIDENCE_ORDERS: tuple[str, ...] = get_args(EvidenceOrder)
DEFAULT_EVIDENCE_ORDER: EvidenceOrder = "best_first"

EVIDENCE_HEADER = (
    "From earlier conversations with the user (verbatim excerpts, for reference only):"
)
# A focused question (agent/focus.py) gets its evidence in the user's own
# voice: the request is then the user reminding the model of what they said
# and asking, which a small model answers instead of talking about "the
# user". Replaying dev focused requests at 0.2 (SmolLM2-135M, 34 requests,
# 4 seeds): this header with the user's statements bare named the fact in 122
# of 136 replies, "From earlier conversations with the user:" with "The user
# said:" lines in 110, "From our earlier conversations:" with "I said:" lines
# in 78 of 102; the long header's "reference" had come back in focused
# replies ("This was a humorous reference to the number 20").
FOCUSED_HEADER = "Earlier I told you:"
KEYS_LINE = "Full records, if needed: fetch_record with key {keys}."

# Who said an excerpt, by the record's key: t<turn> (with the speaker at the
# excerpt's start), t<turn>.<n> a tool result, n<note>, c<compaction record>.
_USER, _REPLY = "The user said", "You replied"
_BY_PREFIX = {"n": "A note you saved", "c": "A summary of earlier turns"}
_TOOL = "A tool returned"
_USER_MARK, _REPLY_MARK = "User: ", "\nAssistant: "


def by_relevance(capsules: Sequence[EvidenceCapsule]) -> list[EvidenceCapsule]:
    """Best-matching first; equal scores keep their packing order."""
    return sorted(capsules, key=lambda c: -c.retrieval_score)


def ordered(
    capsules: Sequence[EvidenceCapsule], order: EvidenceOrder = DEFAULT_EVIDENCE_ORDER
) -> list[EvidenceCapsule]:
    """The capsules in the order the prompt shows them."""
    if order == "packed":
        return list(capsules)
    best = by_relevance(capsules)
    if order == "best_last":
        return best[::-1]
    if order == "best_first":
        return best
    raise ValueError(f"unknown evidence order {order!r}; use one of {', '.join(EVIDENCE_ORDERS)}")


def capsule_text(capsule: EvidenceCapsule, *, users_voice: bool = False) -> str:
    """One capsule as a line that says who said it (the excerpt stays verbatim).

    `users_voice`: under FOCUSED_HEADER the user's own words go bare ("My
    bike lock combination is 4140."), the rest still says who said it."""
    key, text = capsule.retrieval_key, capsule.excerpt.strip()
    if key.startswith("t") and "." in key:
        return f"{_TOOL}: {text}"
    if key[:1] in _BY_PREFIX:
        return f"{_BY_PREFIX[key[:1]]}: {text}"
    if not capsule.speaker:
        return text
    # A turn: "User: <u>\nAssistant: <a>", possibly cut at either end.
    user, marker, reply = text.partition(_REPLY_MARK.strip("\n"))
    if capsule.speaker == "assistant":
        user, reply = "", (user + marker + reply).removeprefix("Assistant:")
    elif not marker:
        user, reply = user, ""
    parts = []
    said = user.strip().removeprefix(_USER_MARK.strip()).strip()
    if said:
        parts.append(said if users_voice else f"{_USER}: {said}")
    if reply.strip():
        parts.append(f"{_REPLY}: {reply.strip()}")
    return " / ".join(parts) or text


def evidence_block(
    report: RetentionReport | None,
    order: EvidenceOrder = DEFAULT_EVIDENCE_ORDER,
    *,
    keys: bool = True,
    focused: bool = False,
) -> str:
    """The capsules as text placed before the user's message in this request only.

    `keys`: name the records' keys for fetch_record (only useful when the
    model is offered that tool); `focused`: a focused question's block, in the
    user's voice under FOCUSED_HEADER."""
    if report is None or not report.capsules:
        return ""
    shown = ordered(report.capsules, order)
    lines = [FOCUSED_HEADER if focused else EVIDENCE_HEADER]
    lines += [f"- {capsule_text(c, users_voice=focused)}" for c in shown]
    if keys:
        lines.append(KEYS_LINE.format(keys=", ".join(c.retrieval_key for c in shown)))
    return "\n".join(lines) + "\n\n"
