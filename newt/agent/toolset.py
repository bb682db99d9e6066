"""The handlers behind the model's tools, bound to one session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from newt.agent.tools import ToolHandler
from newt.recall import RecallRequest

if TYPE_CHECKING:
    from newt.agent.session import ChatSession

# Capsules returned by recall_memory when recall in requests is switched off.
TOOL_RECALL_BUDGET = 1024


def tool_handlers(session: ChatSession) -> dict[str, ToolHandler]:
    store = session.store

    async def save_note(args: dict[str, Any]) -> str:
        # the same NoteBook as /note: one implementation, one set of rules
        action = str(args.get("action", "add"))
        content = str(args.get("content") or "")
        old = str(args.get("old_text") or "")
        if action == "add":
            added = await session.notes.add(store.notes, content)
            return "saved" if added else "already saved"
        if action == "replace":
            await session.notes.replace(store.notes, old, content)
            return "replaced"
        if action == "remove":
            await session.notes.remove(store.notes, old or content)
            return "removed"
        raise ValueError(f"unknown action {action!r}; use add, replace or remove")

    async def recall_memory(args: dict[str, Any]) -> str:
        budget = session.config.recall.retained_token_budget or TOOL_RECALL_BUDGET
        response = await session.recall.recall(
            RecallRequest(str(args.get("query", "")), retained_token_budget=budget)
        )
        report = response.retained_evidence
        if report is None or not report.capsules:
            return "no matching memories"
        return "\n".join(f"[{c.retrieval_key}] {c.excerpt}" for c in report.capsules)

    async def fetch_record(args: dict[str, Any]) -> str:
        key = str(args.get("key", "")).strip()
        record = await session.recall.fetch(key)
        if record is None:
            raise LookupError(f"no record with key {key!r}")
        return record.content

    return {"save_note": save_note, "recall_memory": recall_memory, "fetch_record": fetch_record}
