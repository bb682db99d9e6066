"""What a session is built from: its chat client, and its memory provider
(configured, calibrating, summaries deferred)."""

from __future__ import annotations

from typing import Any

from newt.backend.client import ChatClient
from newt.config import Config
from newt.memory import MemoryProvider, create_provider
from newt.memory.compaction import Summarizer
from newt.memory.notes import NoteBook


def session_provider(
    config: Config, budget: Any, notes: NoteBook, summarizer: Summarizer
) -> MemoryProvider:
    provider = create_provider(
        config.memory.provider,
        context_tokens=budget.context_tokens,
        threshold_pct=config.memory.threshold_pct,
        fold_to=config.memory.fold_to,
        chars_per_token=config.estimation.chars_per_token,
        summarizer=summarizer,
        notes=notes,
        budget_source=budget.source,
        # learn the estimate from the backend's own reports (see newt.memory.calibration)
        calibrate=True,
    )
    owing = provider.summarizing()
    if owing is not None:
        owing.with_deferred_summaries()  # a turn that compacts returns at once
    return provider


def make_client(config: Config, model: str) -> ChatClient:
    return ChatClient(
        config.backend.base_url,
        model,
        config.api_key,
        timeout_s=config.backend.timeout_s,
        max_retries=config.backend.max_retries,
        # the llama-server newt runs (its window known): it reports how far it has
        # read a prompt, which on a slow CPU takes seconds (agent/turn/rounds.py)
        prompt_progress=config.server_context_tokens is not None,
    )
