"""What newt knows about one (base_url, model) pair, and what a turn teaches it.

The capability cache (newt.store) outlives sessions; this object is the live
view of it for one session: the resolved budget and its source, whether the
backend takes tools, the live context ceiling (lowered by an observed
overflow) and the learned token estimate.
"""

from __future__ import annotations

from newt.agent.tools.probe import LOCAL_SERVERS, probe_tool_calls
from newt.backend import learned_limits as caps
from newt.backend.client import ChatClient
from newt.backend.errors import ContextLengthExceededError
from newt.backend.probe import probe_context_window
from newt.config import Config
from newt.memory import MemoryProvider
from newt.store import CapabilityRepo, ModelCapabilities

# Tokens kept free for the reply when checking that a prompt fits.
REPLY_RESERVE_MAX = 1024


class CapabilityTracker:
    def __init__(self, repo: CapabilityRepo, config: Config, base_url: str, model: str) -> None:
        self.repo = repo
        self.config = config
        self.base_url = base_url
        self.model = model
        self.budget = caps.resolve_budget(config.memory.context_tokens, None)
        self.supports_tools: bool | None = None
        # prompt tokens read a second, measured on this session's last request
        # (agent/turn/reply_pace.py: the wait for a first token, where the server says nothing)
        self.prompt_rate: float | None = None
        self.live_ceiling: int | None = None
        self.cached: ModelCapabilities | None = None
        self._saved_estimate: tuple[float, ...] | None = None

    async def refresh(self, *, probe: bool) -> None:
        """Probe the backend (optionally) and re-resolve budget, tools and ceiling."""
        if probe:
            await self.probe()
        cap = await self.repo.get(self.base_url, self.model)
        known = self.config.server_context_tokens
        if known and (cap is None or not cap.context_window):
            # newt's own llama-server: its window is known before it is probed
            # (its port, part of the cache key, is new each run), so the first
            # figures shown are already this window's, not the 8,192 default
            cap = await caps.record_probe(self.repo, self.base_url, self.model, known)
        self.cached = cap
        self.budget = caps.resolve_budget(self.config.memory.context_tokens, cap)
        self.supports_tools = self._tools_choice(cap.supports_tools if cap else None)
        self.live_ceiling = self._ceiling_from(cap)

    def _tools_choice(self, learned: bool | None) -> bool | None:
        """`[backend] tools` wins over what was learned ("auto" keeps it)."""
        return {"on": True, "off": False}.get(self.config.backend.tools, learned)

    async def probe(self) -> None:
        """Ask the backend for its context window and record it in the cache
        (`refresh` then resolves the budget from it)."""
        found = await probe_context_window(self.base_url, self.model, self.config.api_key)
        if found.context_window:
            await caps.record_probe(self.repo, self.base_url, self.model, found.context_window)

    def _ceiling_from(self, cap: ModelCapabilities | None) -> int | None:
        if cap is None:
            return self.config.memory.context_tokens
        limits = [v for v in (cap.context_window, cap.safe_context) if v]
        if self.config.memory.context_tokens:
            limits.append(self.config.memory.context_tokens)
        return min(limits) if limits else None

    def ceiling_and_reserve(self, max_reply: int | None = None) -> tuple[int, int]:
        """The live context ceiling and the tokens kept free for the reply.

        A conversation's own reply cap (`max_reply`, sent as max_tokens) is
        what the reply can take, so it is the reserve, smaller or larger than
        the default; at most half the window, so history always has room.
        """
        ceiling = self.live_ceiling or self.budget.context_tokens
        if max_reply is not None:
            return ceiling, max(1, min(max_reply, ceiling // 2))
        return ceiling, min(REPLY_RESERVE_MAX, ceiling // 4)

    async def record_overflow(self, exc: ContextLengthExceededError) -> None:
        overflow_at = exc.prompt_tokens or exc.context_window or self.budget.context_tokens
        await caps.record_overflow(self.repo, self.base_url, self.model, overflow_at)
        self.live_ceiling = self._ceiling_from(await self.repo.get(self.base_url, self.model))

    async def probe_tools(self, client: ChatClient, system_prompt: str) -> None:
        """For the llama-server newt runs (its window known before any probe): ask the
        model once whether it uses tools well (agent/tools/probe.py), remembered
        under its name across runs; `supports_tools` then says. Other servers: no-op."""
        if self.supports_tools is not None or not self.config.server_context_tokens:
            return
        remembered = await self.repo.get(LOCAL_SERVERS, self.model)
        verdict = remembered.supports_tools if remembered is not None else None
        if verdict is None:
            verdict = await probe_tool_calls(client, system_prompt)
            if verdict is None:
                return  # the request failed: tools are offered, and asked again next turn
            await caps.record_tools(self.repo, LOCAL_SERVERS, self.model, verdict)
        await caps.record_tools(self.repo, self.base_url, self.model, verdict)
        self.supports_tools = verdict

    async def record_tool_trouble(self) -> bool:
        """The model misused the tools it was offered: offer it none from now on,
        remembered for it (also as newt's own llama-server runs it). False when
        `[backend] tools = "on"` keeps them or they were off already."""
        if self.config.backend.tools != "auto" or self.supports_tools is False:
            return False
        self.supports_tools = False
        await caps.record_tools(self.repo, self.base_url, self.model, False)
        if self.config.server_context_tokens:
            await caps.record_tools(self.repo, LOCAL_SERVERS, self.model, False)
        return True

    async def record_tools_unsupported(self) -> None:
        self.supports_tools = False
        await caps.record_tools_unsupported(self.repo, self.base_url, self.model)

    async def record_accepted_prompt(self, prompt_tokens: int) -> None:
        await caps.record_accepted_prompt(self.repo, self.base_url, self.model, prompt_tokens)

    async def remember_estimate(self, provider: MemoryProvider) -> None:
        """Keep the learned estimate (ratio and template glue) per model for next time."""
        learner = provider.calibrating()
        if learner is None:
            return
        ratio, glue = learner.learned_chars_per_token, learner.learned_glue
        if ratio is None or glue is None:
            return
        learned = (float(ratio), *glue)
        if learned == self._saved_estimate:  # skip the read when nothing moved
            return
        cap = await self.repo.get(self.base_url, self.model)
        if cap is None:
            return
        cap.chars_per_token, cap.per_message_tokens, cap.per_reply_tokens = learned
        await self.repo.put(cap)
        self._saved_estimate = learned
