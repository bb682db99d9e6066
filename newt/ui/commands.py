"""Slash commands: one small record each, one parser, one palette provider.

The prompt's `/name arg` and the command palette run the same records through
the same dispatcher (`ChatCommands.run`), so the two can never drift. Both
talk to the screen through the CommandHost protocol.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    name: str
    help: str
    usage: str = ""
    arg_required: bool = False
    """The palette pre-fills `/name ` in the prompt instead of running it."""
    key: str = ""
    """Key binding with the same effect, shown in /help."""

    @property
    def title(self) -> str:
        return f"/{self.name}"


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "Show commands and keys", key="f1"),
    SlashCommand("new", "Start a new conversation", key="ctrl+n"),
    SlashCommand("resume", "Pick a saved conversation (search titles and content)", key="ctrl+o"),
    SlashCommand(
        "memory",
        "Memory panel: budget, usage, turns, notes, retention. /memory search [QUERY]: the"
        " memory view (search, open, forget: f one record, F all matching, ctrl+x everything)",
        key="ctrl+g",
    ),
    SlashCommand(
        "recall",
        "Which memory capsules a message with this text would carry now (nothing is sent)",
        usage="<text>",
        arg_required=True,
    ),
    SlashCommand(
        "incognito",
        "Save nothing of this conversation (what was stored of it is deleted); no argument toggles",
        usage="[on|off]",
    ),
    SlashCommand(
        "note",
        "Notes the model always sees",
        usage="<text> | replace <old> => <new> | remove <text> | list",
        arg_required=True,
    ),
    SlashCommand("compact", "Fold older turns into a summary now", usage="[focus]"),
    SlashCommand(
        "model", "Pick a model the backend serves, or switch to NAME", usage="[name]", key="f2"
    ),
    SlashCommand(
        "settings", "This conversation's system prompt, temperature, top_p, reply cap", key="f3"
    ),
    SlashCommand(
        "preset", "Apply a named preset from the config (a list without NAME)", usage="[name]"
    ),
    SlashCommand("regenerate", "Answer the last prompt again (replaces that turn)", key="ctrl+r"),
    SlashCommand("edit", "Edit the last prompt; sending it replaces that turn", key="f4"),
    SlashCommand(
        "fork", "Continue from turn N (default: the last) in a new conversation", usage="[N]"
    ),
    SlashCommand("export", "Write this conversation to a file here", usage="[md|json]"),
    SlashCommand(
        "import",
        "Import conversations: a ChatGPT or Claude export, newt JSON, Elia, oterm or llm",
        usage="[path]",
    ),
    SlashCommand("tools", "MCP servers, their state and tools; switch one", usage="[on|off NAME]"),
    SlashCommand("evidence", "Show or hide the retained-evidence sidebar", key="ctrl+b"),
    SlashCommand("thinking", "Fold or unfold the model's thinking above replies", key="ctrl+t"),
    SlashCommand(
        "copy",
        "Copy the last reply (N: the Nth from the end; code M: its Mth code block)",
        usage="[N] [code [M]]",
    ),
    SlashCommand("quit", "Quit newt", key="ctrl+q"),
)

BY_NAME: dict[str, SlashCommand] = {c.name: c for c in COMMANDS}


@dataclass(frozen=True)
class PaletteEntry:
    """A palette line that runs a command with its argument ("Search memory"
    runs `/memory search`): a name people look for, not a slash command."""

    title: str
    help: str
    command: str
    arg: str = ""

    def parsed(self) -> ParsedCommand:
        return ParsedCommand(BY_NAME.get(self.command), self.command, self.arg)


PALETTE_EXTRAS: tuple[PaletteEntry, ...] = (
    PaletteEntry(
        "Search memory",
        "Look through what newt remembers; open a record, forget it (/memory search)",
        "memory",
        "search",
    ),
    PaletteEntry(
        "Import conversations…",
        "Bring in ChatGPT or Claude exports, newt JSON, or the Elia, oterm, llm databases"
        " found here (/import)",
        "import",
    ),
)


@dataclass(frozen=True)
class ParsedCommand:
    command: SlashCommand | None
    """None: the name is not a command (the dispatcher says so)."""
    name: str
    arg: str


def parse(text: str) -> ParsedCommand | None:
    """`/name arg` -> ParsedCommand; anything not starting with one slash -> None.

    `//text` escapes a message that really starts with a slash.
    """
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, _, arg = text[1:].partition(" ")
    name = name.strip().lower()
    return ParsedCommand(BY_NAME.get(name), name, arg.strip())


def completions(text: str) -> list[SlashCommand]:
    """Commands whose name starts with what was typed after the slash (no space yet)."""
    if not text.startswith("/") or " " in text or "\n" in text or text.startswith("//"):
        return []
    prefix = text[1:].lower()
    return [c for c in COMMANDS if c.name.startswith(prefix)]
