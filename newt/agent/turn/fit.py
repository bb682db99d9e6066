"""Making a request fit: the pre-send guard and the recovery from an overflow.

The guard folds the oldest turns first when the prompt (capsules, tool
schemas and images included) plus the reply reserve would pass the live
ceiling; after a context-length error the history is folded to what the
server's own count says fits. Kept apart from the streaming so each can be
read alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from newt.agent.turn.context import TurnContext
from newt.backend.errors import ContextLengthExceededError
from newt.memory import MemMessage


class RequestFit:
    def __init__(self, ctx: TurnContext) -> None:
        self.s = ctx

    def compacting(self) -> tuple[Any, tuple[str, int, int]] | None:
        """The provider's compact_for and its usage, if it can compact on demand."""
        provider = self.s.provider
        usage = provider.usage()
        if usage is None:
            return None
        return provider.compact_for, usage

    async def guard(self, messages: list[MemMessage]) -> bool:
        """Compact first if prompt + reply reserve would pass the live ceiling.

        `used` counts the system prompt and history once the backend has
        reported a prompt size; before that it counts turns only, so the system
        prompt is added here.
        """
        compacting = self.compacting()
        if compacting is None:
            return False
        compact_for, usage = compacting
        ceiling, required = self.required(messages)
        over = usage[1] + required > ceiling
        # told even when it fits: the provider leaves room for the next request like it
        await compact_for(required, limit=ceiling)
        return over

    def required(self, messages: list[MemMessage]) -> tuple[int, int]:
        """The live ceiling, and what the new message, tool schemas and the
        reply reserve need on top of the working set."""
        s = self.s
        ceiling, reserve = s.capabilities.ceiling_and_reserve(s.settings.max_tokens)
        required = s.tokens_for(messages[-1].content) + reserve + self.schema_tokens()
        required += self.image_tokens()
        anchored = s.provider.anchored()
        if anchored is None or anchored.last_reported is None:
            required += s.tokens_for(messages[0].content)
        return ceiling, required

    def image_tokens(self) -> int:
        return self.s.attachments.image_tokens if self.s.attachments is not None else 0

    def fits(self, messages: list[MemMessage]) -> bool:
        usage = self.s.provider.usage()
        ceiling, required = self.required(messages)
        return usage is None or usage[1] + required <= ceiling

    def can_fetch_records(self) -> bool:
        """Record keys in the evidence help only a model offered fetch_record."""
        s = self.s
        if s.capabilities.supports_tools is False:
            return False
        return any(t.get("function", {}).get("name") == "fetch_record" for t in s.tool_schemas)

    def all_schema_tokens(self, count: Callable[[str], int] | None = None) -> int:
        """What the tool schemas sent with this request take (by `count`, else
        the provider's estimate)."""
        s = self.s
        if s.capabilities.supports_tools is False or not s.tool_schemas:
            return 0
        return (count or s.tokens_for)(json.dumps(s.tool_schemas))

    def schema_tokens(self) -> int:
        """Tool schemas count against the window once the backend reported
        nothing yet (a report already includes them), and MCP schemas the
        last report did not carry (a resumed conversation, /tools on)."""
        s = self.s
        if not self.all_schema_tokens():
            return 0
        anchored = s.provider.anchored()
        if anchored is not None and anchored.last_reported is not None:
            if s.extra_tools is None:
                return 0
            now = s.tokens_for(json.dumps(s.extra_tools.schemas()))
            return max(0, now - s.extra_tools.reported_schema_tokens)
        return self.all_schema_tokens()

    async def shrink_after_overflow(self, exc: ContextLengthExceededError) -> bool:
        """Fold enough history that the retried prompt fits what the server said.

        Our figure and the server's count differ, so scale: if the server
        counted P tokens where we hold `used`, keeping used * target / P fits.
        """
        s = self.s
        compacting = self.compacting()
        if compacting is None:
            return False
        compact_for, usage = compacting
        ceiling, reserve = s.capabilities.ceiling_and_reserve(s.settings.max_tokens)
        target = max(0, ceiling - reserve)
        reported = exc.prompt_tokens or 0
        limit = int(usage[1] * target / reported) if reported > target else usage[1] // 2
        await compact_for(0, limit=limit)
        return s.provider.usage() != usage
