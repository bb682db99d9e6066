"""Regenerate, edit and fork: the session's operations that rewrite the conversation.

Regenerate and edit run an ordinary turn (Turns.send with
`replace_last=True`) under the session gate and the conversation's writer
lock. Before it, the provider is restored from the log *without* the last turn
(the same restore a reopened conversation gets), so the request carries
exactly what a fresh session would; the store marks the old turn replaced in
the transaction that stores the new one. If the new turn fails, nothing was
marked and the provider is restored with the old turn again.

A fork copies the live log up to a turn into a new conversation (newt.store.
turn_edits) and switches the session to it: the restore then rebuilds the
working set, the compaction record and its pending summary from the copies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from newt.agent.display import HistoryEntry, history_entries
from newt.agent.errors import SessionError
from newt.agent.session.conversations import Conversations
from newt.agent.session.model_link import ModelLink
from newt.agent.session.settings import SettingsControls
from newt.agent.session.turn_gate import TurnGate
from newt.agent.turn.attachments import IMAGE_TOKENS_ESTIMATE, prepare, reload_images, typed_prompt
from newt.agent.turn.image_parts import TurnAttachments
from newt.memory.restore import conversation_turns_from_log
from newt.store import Conversation, StoredTurn
from newt.store.image_support import ImageSupportRepo
from newt.store.live_log import live_rows
from newt.store.turn_edits import fork_conversation


class Edits:
    """What rewrites the conversation (ChatSession owns one; a turn, regenerate
    and edit_last included, runs between `before_turn` and `end_replacement`:
    newt.agent.session.turns).

    Handed the session's gate, the conversation held (its log, store and
    summaries; the writer lock, loading the fork), the model link (the
    provider, the model, the context window, the estimate) and the settings,
    for the anchor shift a restored working set still owes."""

    def __init__(
        self,
        gate: TurnGate,
        conversations: Conversations,
        link: ModelLink,
        settings: SettingsControls,
    ) -> None:
        self.gate = gate
        self.conversations = conversations
        self.log = conversations.log
        self.store = conversations.store
        self.summaries = conversations.summaries
        self.link = link
        self.settings = settings
        self._replaced_log: list[StoredTurn] | None = None
        self._images: TurnAttachments | None = None  # the last turn's: what it knows about images

    async def history(self) -> list[HistoryEntry]:
        """The conversation as the chat view shows it: replaced turns left out."""
        return history_entries(live_rows(await self.log.history()))

    async def last_prompt(self) -> str:
        """The words of the last turn as the user typed them (for /edit)."""
        turns = [t for t in live_rows(await self.log.history()) if t.kind == "turn"]
        if not turns:
            raise SessionError("there is no prompt to edit yet")
        return typed_prompt(turns[-1].user, turns[-1].attachments)

    def check_attachments(self, text: str) -> None:
        """Raise AttachmentError for a `@path` that cannot be sent (the UI asks
        before clearing the prompt; the turn checks again, with what is known
        about images)."""
        known, link = self._images, self.link
        if known is not None and (known.base_url, known.model) != (link.base_url, link.model):
            known = None
        prepare(
            text,
            cwd=Path.cwd(),
            context_tokens=self.link.context_tokens(),
            tokens_for=self.link.estimate_tokens,
            images=known.known if known else None,
            images_refused=known.refused if known else "",
        )

    async def before_turn(self, text: str, replace_last: bool) -> tuple[str, TurnAttachments]:
        """Inside the locks, before a turn: take the replaced turn out of the
        working set, expand `@path` mentions (a regenerate sends the stored
        prompt as it was sent, its images read again by reference)."""
        repo, base_url, model = ImageSupportRepo(self.store.db), self.link.base_url, self.link.model
        known = await repo.get(base_url, model)
        extras = TurnAttachments(repo, base_url, model)
        if known is not None:
            extras.known, extras.refused = known
        self._images = extras
        refs: list[dict[str, Any]] = []
        if replace_last:
            text, refs = await self._begin_replacement(text)
        try:
            if refs:  # a regenerate: the text is already expanded
                extras.image_parts = reload_images(refs)
            else:
                prepared = prepare(
                    text,
                    cwd=Path.cwd(),
                    context_tokens=self.link.context_tokens(),
                    tokens_for=self.link.estimate_tokens,
                    images=extras.known,
                    images_refused=extras.refused,
                )
                text, refs, extras.image_parts = prepared.text, prepared.refs, prepared.image_parts
        except SessionError:
            self.end_replacement()
            raise
        extras.image_tokens = len(extras.image_parts) * IMAGE_TOKENS_ESTIMATE
        self.log.attachments = refs
        return text, extras

    async def _begin_replacement(self, text: str) -> tuple[str, list[dict[str, Any]]]:
        """Take the last turn out of the working set. Returns the words to send
        (a regenerate sends the stored ones) and the attachment references a
        regenerate carries over."""
        stored = await self.log.history()
        turns = [t for t in live_rows(stored) if t.kind == "turn"]
        if not turns:
            raise SessionError("there is no turn to regenerate yet")
        last = turns[-1]
        await self.summaries.cancel()  # its record described the old working set
        self._restore(stored, {last.id})
        self.log.replacing, self.log.replacing_key = last.id, last.record_key
        self._replaced_log = stored
        if text:
            return text, []
        return last.user, list(last.attachments)

    def end_replacement(self) -> None:
        """After the turn: if the new turn was not stored, the old one is still
        the conversation's, so the working set gets it back."""
        stored, self._replaced_log = self._replaced_log, None
        if self.log.replacing is None or stored is None:
            return
        self.log.replacing = self.log.replacing_key = None
        self._restore(stored, set())

    def _restore(self, stored: list[StoredTurn], excluded: set[int]) -> None:
        """The working set a fresh session restores from `stored` without the
        `excluded` turns (synchronous: it also runs when a turn is closed)."""
        provider = self.link.provider
        provider.restore_turns(conversation_turns_from_log(stored, excluded))
        self.settings.reapply_anchor_shift(
            live_rows(stored, excluded)
        )  # a system prompt changed since
        self.log.track_resident(stored, provider.resident_turns(), excluded)

    async def fork(self, at: int | None = None) -> Conversation:
        """Fork at turn `at` (1 = the first turn shown; None = the last) into a
        new conversation, and continue in it."""
        async with self.gate:
            source = self.log.conversation
            if source is None:
                raise SessionError("nothing to fork yet: this conversation has no turns")
            async with self.conversations.writer():
                stored = await self.log.history()
                turns = [t for t in live_rows(stored) if t.kind == "turn"]
                if not turns:
                    raise SessionError("nothing to fork yet: this conversation has no turns")
                if at is not None and not 1 <= at <= len(turns):
                    raise SessionError(
                        f"there is no turn {at}: this conversation has {len(turns)} "
                        f"(/fork N with N from 1 to {len(turns)})"
                    )
                target = turns[-1 if at is None else at - 1]
                current = await self.store.conversations.get(source.id) or source
                fork = await fork_conversation(self.store.db, current, stored, target.id)
            await self.conversations.load(fork)
        return fork
