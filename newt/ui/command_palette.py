"""The slash commands in the command palette (ctrl+p), run by the screen that
hosts them, and a few named entries that run a command with its argument
("Search memory")."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from newt.ui.command_host import CommandHost
from newt.ui.commands import COMMANDS, PALETTE_EXTRAS
from newt.ui.screens.chat import ChatScreen


class SlashCommandProvider(Provider):
    """The slash commands in the command palette (ctrl+p)."""

    def _chat(self) -> CommandHost | None:
        """The chat screen under the palette (a modal may be on top of it)."""
        for screen in reversed(self.app.screen_stack):
            if isinstance(screen, ChatScreen):
                return screen
        return None

    async def discover(self) -> Hits:
        chat = self._chat()
        if chat is None:
            return
        for command in COMMANDS:
            yield DiscoveryHit(
                f"{command.title} {command.usage}".strip(),
                partial(chat.palette_command, command),
                help=command.help,
            )
        for entry in PALETTE_EXTRAS:
            yield DiscoveryHit(
                entry.title, partial(chat.run_command, entry.parsed()), help=entry.help
            )

    async def search(self, query: str) -> Hits:
        chat = self._chat()
        if chat is None:
            return
        matcher = self.matcher(query)
        for command in COMMANDS:
            # A match on the name beats one that only appears in the help text.
            score = matcher.match(command.title) or matcher.match(command.help) * 0.3
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.title),
                    partial(chat.palette_command, command),
                    text=command.title,
                    help=command.help,
                )
        for entry in PALETTE_EXTRAS:
            score = matcher.match(entry.title) or matcher.match(entry.help) * 0.3
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(entry.title),
                    partial(chat.run_command, entry.parsed()),
                    text=entry.title,
                    help=entry.help,
                )
