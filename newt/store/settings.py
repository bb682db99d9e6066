"""Each conversation's own settings (migration 8): system prompt, sampling
parameters, reply cap, the preset they came from, and the memory figure's
pending correction for a system prompt changed since the last measured turn.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from newt.chat_settings import ChatSettings
from newt.store.db import Database


@dataclass
class StoredSettings:
    settings: ChatSettings = field(default_factory=ChatSettings)
    anchor_shift: int = 0
    """Tokens the system prompt gained (or lost) after the log's last measured
    prompt size: a restore anchored on a row up to `shift_after` adds them."""
    shift_after: int | None = None
    """The newest row of the log when the shift began."""


class SettingsRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, conv_id: str) -> StoredSettings | None:
        cur = await self.db.conn.execute(
            "SELECT * FROM conversation_settings WHERE conversation_id = ?", (conv_id,)
        )
        row = await cur.fetchone()
        if row is None:
            return None
        settings = ChatSettings(
            system_prompt=row["system_prompt"],
            temperature=row["temperature"],
            top_p=row["top_p"],
            max_tokens=row["max_tokens"],
            preset=row["preset"],
        )
        return StoredSettings(settings, row["anchor_shift"], row["shift_after"])

    async def put(self, conv_id: str, stored: StoredSettings) -> None:
        s = stored.settings
        async with self.db.transaction() as conn:
            await conn.execute(
                "INSERT INTO conversation_settings(conversation_id, system_prompt, temperature,"
                " top_p, max_tokens, preset, anchor_shift, shift_after, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(conversation_id) DO UPDATE SET"
                " system_prompt = excluded.system_prompt,"
                " temperature = excluded.temperature, top_p = excluded.top_p,"
                " max_tokens = excluded.max_tokens, preset = excluded.preset,"
                " anchor_shift = excluded.anchor_shift, shift_after = excluded.shift_after,"
                " updated_at = excluded.updated_at",
                (
                    conv_id,
                    s.system_prompt,
                    s.temperature,
                    s.top_p,
                    s.max_tokens,
                    s.preset,
                    stored.anchor_shift,
                    stored.shift_after,
                    time.time(),
                ),
            )
