"""newt's memory: what of a conversation the model sees.

How the agent drives a provider (docs/design.md section 4):

    provider = create_provider(cfg.provider, context_tokens=res.context_tokens,
                               threshold_pct=cfg.threshold_pct,
                               chars_per_token=cached_ratio or cfg.chars_per_token,
                               budget_source=res.source, summarizer=summarize,
                               notes=notebook, calibrate=True)
    # resume: the durable log in order (pending/failed turns are skipped)
    provider.restore_turns(conversation_turns_from_log(await store.turns.for_conversation(cid)))

    messages = provider.build_messages(system_prompt, user_text)
    # pre-send guard: the new message, anything sent once and the reply reserve
    await provider.compact_for(provider.tokens_for(user_text) + reserve, limit=live_ceiling)
    ... stream the reply (build_messages again if the guard folded turns) ...
    # usage.input_tokens must describe the build_messages() prompt: subtract
    # what rode along once (recall capsules)
    await provider.sync_turn(user_text, reply, TurnMetrics(Usage(prompt, completion)))
    # persist the turn, then the record (if the guard or sync_turn minted one):
    if (record := provider.take_compaction_record()) is not None:
        await store.turns.add_compaction(cid, record, resident_turns=provider.resident_turns(),
                                         used_after=provider.usage()[1])
    # /compact [focus]: await provider.compact(focus), then persist the same way.
    # calibration: persist provider.learned_chars_per_token into the capability
    # cache's chars_per_token; seed the next session with it.

Notes go through the NoteBook's async methods (`await notebook.add(store.notes,
text)`); a provider's sync add_note & co change the in-memory notebook only.
"""

from newt.memory.calibration import CalibratedEstimation, Calibrator, pieces
from newt.memory.compaction import (
    RECORD_EXPLANATION,
    Summarizer,
    cap_summary,
    format_record,
    is_record,
    owed_body,
    recall_text,
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
from newt.memory.token_budget import TokenBudget
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
    "format_record",
    "is_record",
    "owed_body",
    "pieces",
    "recall_text",
    "record_summary",
    "summarizer_input",
]
