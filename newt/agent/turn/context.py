"""What one turn sees of the session, and what it has gathered so far.

`TurnContext` holds everything a turn touches and nothing else of the session,
so a turn can be driven without one; `TurnProgress` is the one small state
object its stages (newt.agent.turn.runner, turn_fit, turn_rounds) pass along.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from newt.agent import events as ev
from newt.agent.conversation.log import ConversationLog
from newt.agent.reply_stats import ReplyClock, ReplyStats
from newt.agent.tools.builtin import TOOL_SCHEMAS, ToolHandler
from newt.agent.turn.image_parts import TurnAttachments
from newt.agent.turn.model_facts import CapabilityTracker
from newt.backend.client import ChatClient
from newt.chat_settings import ChatSettings
from newt.memory import MemoryProvider
from newt.recall.evidence import EvidenceSource
from newt.recall.retention import est_tokens


@dataclass
class TurnContext:
    """Everything one turn touches, and nothing else of the session."""

    log: ConversationLog
    provider: MemoryProvider
    evidence: EvidenceSource
    client: ChatClient
    capabilities: CapabilityTracker
    tools: dict[str, ToolHandler]
    system_prompt: str
    tokens_for: Callable[[str], int]
    """The provider's (possibly calibrated) estimate of one message."""
    content_tokens: Callable[[str], int] = est_tokens
    """The same estimate for a piece of a message (the evidence block's units)."""
    tool_schemas: list[dict[str, Any]] = field(default_factory=lambda: list(TOOL_SCHEMAS))
    extra_tools: ExtraTools | None = None
    """MCP servers' tools: started once the turn is persisted, then offered beside ours."""
    settings: ChatSettings = field(default_factory=ChatSettings)
    """The conversation's own parameters (sent when set) and reply cap (the reserve)."""
    attachments: TurnAttachments | None = None
    """Image parts of the new message (this request only) and what the backend teaches."""


class ExtraTools(Protocol):
    """Tools from outside newt (newt.agent.tools.mcp.McpTools)."""

    reported_schema_tokens: int
    """Tokens of these schemas inside the prompt size the backend last reported."""

    async def prepare(self) -> list[str]: ...  # start what is needed; notices for the user
    def schemas(self) -> list[dict[str, Any]]: ...
    def handlers(self) -> dict[str, ToolHandler]: ...


@dataclass
class TurnProgress:
    reply: str = ""
    thinking: str = ""  # the model's reasoning: stored and shown, never sent back
    clock: ReplyClock = field(default_factory=ReplyClock)
    prompt_estimate: int | None = None  # of the first round, for a backend without usage
    first_token_s: float | None = None  # the wait for the reply's first token (first round)
    tool_events: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int | None = None  # of the first round: the working set + new message
    completion_tokens: int = 0
    cached_tokens: int | None = None
    compactions: list[ev.Compacted] = field(default_factory=list)
    interrupted: bool = False
    finish_reason: str | None = None  # of the last round: "length" when cut at the cap
    compact_reason: str = "budget"
    evidence: str = ""
    recallable: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    tools_offered: bool = False  # some round of this turn offered tools
    tool_trouble: str | None = None
    """How this turn's model misused the tools it was offered (a loop, a tool
    never offered, rounds used up), said in a few words; None when it did not."""

    def usage(self) -> ev.UsageReported | None:
        if self.prompt_tokens is None:
            return None
        return ev.UsageReported(self.prompt_tokens, self.completion_tokens, self.cached_tokens)

    def stats(self, tokens_for: Callable[[str], int]) -> ReplyStats:
        """The footer's figures: the backend's report, else newt's estimate."""
        seconds = self.clock.seconds or None
        cut = self.finish_reason == "length"
        if self.prompt_tokens is not None:
            return ReplyStats(
                self.prompt_tokens, self.completion_tokens, seconds, stopped_for_length=cut,
                first_token_s=self.first_token_s, cached_tokens=self.cached_tokens,
            )  # fmt: skip
        completion = tokens_for(self.thinking + self.reply) if self.thinking or self.reply else 0
        return ReplyStats(
            self.prompt_estimate, completion, seconds, estimated=True, stopped_for_length=cut,
            first_token_s=self.first_token_s,
        )  # fmt: skip

    def done(self, turn_id: int, status: str, tokens_for: Callable[[str], int]) -> ev.TurnDone:
        return ev.TurnDone(
            turn_id,
            self.reply,
            status,
            self.usage(),
            self.compactions,
            thinking=self.thinking.strip(),
            stats=self.stats(tokens_for),
            finish_reason=self.finish_reason,
        )
