"""The handlers behind the model's built-in tools, bound to a small context.

The context holds only what the tools touch (the notebook, recall, the
window for capping results), so they can be tested and reused without a
session; MCP tools join the same handler table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from newt.agent.tools.builtin import ToolHandler
from newt.memory.notes import NoteBook, NoteStore
from newt.recall import RecallEngine, RecallRequest
from newt.recall.presentation import Packing
from newt.store.forget import FORGOTTEN

# Capsules returned by recall_memory when recall in requests is switched off.
TOOL_RECALL_BUDGET = 1024


@dataclass
class ToolContext:
    notebook: NoteBook
    notes: NoteStore
    recall: RecallEngine
    recall_budget: int
    """Tokens of capsules recall_memory may return."""


def tool_handlers(ctx: ToolContext) -> dict[str, ToolHandler]:
    async def save_note(args: dict[str, Any]) -> str:
        # the same NoteBook as /note: one implementation, one set of rules
        action = str(args.get("action", "add"))
        content = str(args.get("content") or "")
        old = str(args.get("old_text") or "")
        if FORGOTTEN in content:  # the mark of what the user forgot is nothing to keep
            raise ValueError("that text holds a part the user forgot; a note keeps only what is")
        if action == "add":
            added = await ctx.notebook.add(ctx.notes, content)
            return "saved" if added else "already saved"
        if action == "replace":
            await ctx.notebook.replace(ctx.notes, old, content)
            return "replaced"
        if action == "remove":
            await ctx.notebook.remove(ctx.notes, old or content)
            return "removed"
        raise ValueError(f"unknown action {action!r}; use add, replace or remove")

    async def recall_memory(args: dict[str, Any]) -> str:
        budget = ctx.recall_budget or TOOL_RECALL_BUDGET
        # the same block a request carries: oldest first by day, who said it,
        # a line cut short ending in "…" (its first words fetch it whole)
        response = await ctx.recall.recall(
            RecallRequest(
                str(args.get("query", "")),
                retained_token_budget=budget,
                packing=Packing(fetchable=True),
            )
        )
        return response.block.strip() or "nothing in memory matches"

    async def fetch_record(args: dict[str, Any]) -> str:
        key = str(args.get("key", "")).strip()
        record = await ctx.recall.fetch(key)
        if record is None:
            raise LookupError(f"no record with key {key!r}")
        return record.content

    return {"save_note": save_note, "recall_memory": recall_memory, "fetch_record": fetch_record}
