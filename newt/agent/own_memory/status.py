"""The figures the /memory panel, the token meter and `--json` show."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from newt.agent.reply_stats import TokenTally
from newt.agent.tools.builtin import TOOL_SCHEMAS
from newt.memory import MemoryProvider
from newt.memory.notes import NoteBook
from newt.recall import RetentionReport


@dataclass
class MemoryStatus:
    """Everything the /memory panel and `--json` report."""

    provider: str
    label: str
    used: int
    budget: int
    budget_source: str
    context_tokens: int
    last_reported: int | None
    estimate_delta: int
    resident_turns: int
    total_turns: int
    compactions: int
    notes_used: int
    notes_limit: int
    last_retention: RetentionReport | None = None
    tool_tokens: int = 0
    """Estimated tokens of the tool schemas each request carries (MCP tools included)."""
    tools_offered: int = 0
    mcp_tools: int = 0
    total_prompt_tokens: int = 0
    """Prompt tokens summed over this conversation's replies (each request counted whole)."""
    total_completion_tokens: int = 0
    total_replies: int = 0
    total_estimated: int = 0
    total_cached_tokens: int = 0
    """Of this session's prompt tokens, those the server read from its cache."""
    """How many of those replies carry newt's estimate instead of a backend report."""
    summary_failure: str | None = None
    """Why the last summary owed could not be written (None: it was, or none was asked)."""


def memory_status(
    provider: MemoryProvider,
    budget: Any,
    notes: NoteBook,
    last_retention: RetentionReport | None,
    tally: TokenTally | None = None,
) -> MemoryStatus:
    usage = provider.usage() or ("tokens", 0, 0)
    anchored = provider.anchored()
    owing = provider.summarizing()
    tally = tally or TokenTally()
    return MemoryStatus(
        provider=provider.name,
        label=usage[0],
        used=usage[1],
        budget=usage[2],
        budget_source=budget.source,
        context_tokens=budget.context_tokens,
        last_reported=anchored.last_reported if anchored else None,
        estimate_delta=anchored.estimate_delta if anchored else 0,
        resident_turns=provider.resident_turns(),
        total_turns=anchored.total_turns if anchored else provider.resident_turns(),
        compactions=anchored.compactions if anchored else 0,
        notes_used=notes.used_chars,
        notes_limit=notes.limit,
        last_retention=last_retention,
        total_prompt_tokens=tally.prompt_tokens,
        total_cached_tokens=tally.cached_tokens,
        total_completion_tokens=tally.completion_tokens,
        total_replies=tally.replies,
        total_estimated=tally.estimated,
        summary_failure=owing.summary_failure if owing is not None else None,
    )


def dump_report(report: RetentionReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "budget_tokens": report.budget_tokens,
        "retained_tokens": report.retained_tokens,
        "candidates_examined": report.candidates_examined,
        "dropped": report.dropped,
        "capsules": [
            {
                "id": c.id,
                "retrieval_key": c.retrieval_key,
                "excerpt": c.excerpt,
                "tokens": c.tokens,
                "recoverability": c.recoverability,
            }
            for c in report.capsules
        ],
    }


def add_tool_costs(
    status: MemoryStatus, mcp_schemas: list[dict[str, Any]], tokens_for: Callable[[str], int]
) -> None:
    """What the tool schemas offered with each request cost the window."""
    schemas = TOOL_SCHEMAS + mcp_schemas
    status.tool_tokens = tokens_for(json.dumps(schemas))
    status.tools_offered, status.mcp_tools = len(schemas), len(schemas) - len(TOOL_SCHEMAS)
