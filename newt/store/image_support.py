"""Whether a (base_url, model) takes images, learned from its answers.

Kept apart from model_capabilities: a rejection is a fact about the model
(llama-server without a multimodal projector, a text-only API model) that
newt must remember and explain, with the server's words.
"""

from __future__ import annotations

import time

from newt.store.db import Database


class ImageSupportRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, base_url: str, model: str) -> tuple[bool, str] | None:
        """(supported, the server's words when it refused), or None if never tried."""
        cur = await self.db.conn.execute(
            "SELECT supported, detail FROM model_image_support WHERE base_url = ? AND model = ?",
            (base_url, model),
        )
        row = await cur.fetchone()
        return None if row is None else (bool(row[0]), str(row[1]))

    async def put(self, base_url: str, model: str, supported: bool, detail: str = "") -> None:
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO model_image_support(base_url, model, supported, detail, updated_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT(base_url, model) DO UPDATE SET"
                " supported = excluded.supported, detail = excluded.detail,"
                " updated_at = excluded.updated_at",
                (base_url, model, int(supported), detail, time.time()),
            )
