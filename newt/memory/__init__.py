"""newt's memory: what of a conversation the model sees.

Public names follow DESIGN.md section 2. The agent uses a provider like this:

    provider = create_provider(cfg.provider, context_tokens=res.context_tokens,
                               threshold_pct=cfg.threshold_pct,
                               chars_per_token=cfg.chars_per_token,
                               budget_source=res.source, summarizer=summarize,
                               notes=await NoteBook.load(store.notes))
    provider.restore_turns(conversation_turns_from_log(await store.turns.for_conversation(cid)))
    messages = provider.build_messages(system_prompt, user_text)
    await provider.compact_for(estimated_request_tokens, limit=live_ceiling)  # pre-send guard
    ... stream the reply ...
    await provider.sync_turn(user_text, reply, TurnMetrics(Usage(prompt, completion)))
    # persist the turn, then the record (if any) with the provider's figures:
    if (record := provider.take_compaction_record()) is not None:
        await store.turns.add_compaction(cid, record, resident_turns=provider.resident_turns(),
                                         used_after=provider.usage()[1])
"""

from newt.memory.calibration import CalibratedEstimation, Calibrator, pieces
from newt.memory.compaction import (
    RECORD_EXPLANATION,
    cap_summary,
    fallback_summary,
    format_record,
    is_record,
    record_summary,
    summarizer_input,
)
from newt.memory.errors import (
    DuplicateNote,
    EmptyNote,
    NoteAmbiguous,
    NoteError,
    NoteNotFound,
    NotesFull,
    NotesUnsupported,
)
from newt.memory.factory import PROVIDER_NAMES, create_provider
from newt.memory.notes import NOTES_CHAR_LIMIT, NoteBook, NoteStore
from newt.memory.provider import BaseProvider, MemoryProvider
from newt.memory.restore import conversation_turns_from_log
from newt.memory.rolling_window import RollingWindow
from newt.memory.token_budget import Summarizer, TokenBudget
from newt.memory.types import (
    COMPACTION_END,
    COMPACTION_MARKER,
    DEFAULT_CONTEXT_TOKENS,
    ConversationTurn,
    Estimator,
    MemMessage,
    SessionContext,
    TokenEstimation,
    TurnMetrics,
    Usage,
)

__all__ = [
    "COMPACTION_END",
    "COMPACTION_MARKER",
    "DEFAULT_CONTEXT_TOKENS",
    "NOTES_CHAR_LIMIT",
    "PROVIDER_NAMES",
    "RECORD_EXPLANATION",
    "BaseProvider",
    "CalibratedEstimation",
    "Calibrator",
    "ConversationTurn",
    "DuplicateNote",
    "EmptyNote",
    "Estimator",
    "MemMessage",
    "MemoryProvider",
    "NoteAmbiguous",
    "NoteBook",
    "NoteError",
    "NoteNotFound",
    "NoteStore",
    "NotesFull",
    "NotesUnsupported",
    "RollingWindow",
    "SessionContext",
    "Summarizer",
    "TokenBudget",
    "TokenEstimation",
    "TurnMetrics",
    "Usage",
    "cap_summary",
    "conversation_turns_from_log",
    "create_provider",
    "fallback_summary",
    "format_record",
    "is_record",
    "pieces",
    "record_summary",
    "summarizer_input",
]
