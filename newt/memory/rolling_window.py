"""RollingWindow: the simple provider that keeps the last N turns.

No token accounting and no compaction records: turns beyond N are dropped
(they stay in the durable log and in recall). Restoring skips any compaction
records a token_budget session left in the log.
"""

from __future__ import annotations

from collections.abc import Sequence

from newt.memory.provider import BaseProvider
from newt.memory.types import ConversationTurn, MemMessage, TurnMetrics

DEFAULT_MAX_TURNS = 20


class RollingWindow(BaseProvider):
    name = "rolling_window"

    def __init__(self, max_turns: int = DEFAULT_MAX_TURNS) -> None:
        super().__init__()
        self.max_turns = max(1, int(max_turns))
        self._turns: list[tuple[str, str]] = []

    def build_messages(self, system_prompt: str, new_task: str) -> list[MemMessage]:
        messages = [MemMessage("system", self.compose_system_prompt(system_prompt))]
        for user, assistant in self._turns:
            messages.append(MemMessage("user", user))
            if assistant:
                messages.append(MemMessage("assistant", assistant))
        messages.append(MemMessage("user", new_task))
        return messages

    async def sync_turn(self, user: str, assistant: str, metrics: TurnMetrics) -> None:
        self._turns.append((user, assistant))
        del self._turns[: -self.max_turns]

    def reset(self) -> None:
        self._turns = []

    def restore_turns(self, turns: Sequence[ConversationTurn]) -> None:
        ordinary = [(t.user, t.assistant) for t in turns if not t.is_compaction]
        self._turns = ordinary[-self.max_turns :]

    def usage(self) -> tuple[str, int, int]:
        return ("turns", len(self._turns), self.max_turns)

    def resident_turns(self) -> int:
        return len(self._turns)
