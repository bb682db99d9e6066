"""The per-(base_url, model) capability cache."""

from __future__ import annotations

import time

from newt.store.db import Database
from newt.store.models import ModelCapabilities

_FIELDS = (
    "context_window",
    "max_ok_input",
    "safe_context",
    "overflow_at",
    "supports_tools",
    "chars_per_token",
    "per_message_tokens",
    "per_reply_tokens",
)


class CapabilityRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, base_url: str, model: str) -> ModelCapabilities | None:
        cur = await self.db.conn.execute(
            "SELECT * FROM model_capabilities WHERE base_url = ? AND model = ?",
            (base_url, model),
        )
        row = await cur.fetchone()
        if row is None:
            return None
        tools = row["supports_tools"]
        return ModelCapabilities(
            base_url=row["base_url"],
            model=row["model"],
            context_window=row["context_window"],
            max_ok_input=row["max_ok_input"],
            safe_context=row["safe_context"],
            overflow_at=row["overflow_at"],
            supports_tools=None if tools is None else bool(tools),
            chars_per_token=row["chars_per_token"],
            per_message_tokens=row["per_message_tokens"],
            per_reply_tokens=row["per_reply_tokens"],
            updated_at=row["updated_at"],
        )

    async def put(self, cap: ModelCapabilities) -> None:
        cap.updated_at = time.time()
        tools = None if cap.supports_tools is None else int(cap.supports_tools)
        values = (
            cap.context_window,
            cap.max_ok_input,
            cap.safe_context,
            cap.overflow_at,
            tools,
            cap.chars_per_token,
            cap.per_message_tokens,
            cap.per_reply_tokens,
        )
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO model_capabilities(base_url, model, "
                + ", ".join(_FIELDS)
                + ", updated_at) VALUES ("
                + ", ".join("?" * (len(_FIELDS) + 3))
                + ")"
                " ON CONFLICT(base_url, model) DO UPDATE SET "
                + ", ".join(f"{f} = excluded.{f}" for f in _FIELDS)
                + ", updated_at = excluded.updated_at",
                (cap.base_url, cap.model, *values, cap.updated_at),
            )
