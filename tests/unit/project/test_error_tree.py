"""One error tree: every error newt raises for the user is a NewtError, and
one mapping gives the CLI's exit status and the UI's message."""

from __future__ import annotations

from pathlib import Path

import pytest

from newt.agent.errors import ConversationNotFound
from newt.backend.errors import RateLimitedError, UnreachableError
from newt.backend.models import ModelListUnavailable
from newt.chat_settings import SettingsError
from newt.cli.main import UsageError
from newt.config import ConfigError
from newt.errors import NewtError, user_message
from newt.importing.model import ImportFormatError
from newt.mcp.config import McpConfigError
from newt.memory.errors import NoteNotFound
from newt.store.errors import DatabaseTooNewError
from newt.ui.errors import describe


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (UnreachableError("the backend is down"), 1),
        (RateLimitedError("slow down"), 1),
        (ModelListUnavailable("no list"), 1),
        (ConversationNotFound("no conversation abc"), 2),
        (ConfigError("config.toml line 3: bad key"), 2),
        (SettingsError("temperature must be between 0 and 2"), 2),
        (McpConfigError("mcp.servers.fs.approve"), 2),
        (NoteNotFound("kites"), 2),
        (ImportFormatError(Path("export.json"), "not a ChatGPT export"), 2),
        (UsageError("give a prompt"), 2),
        (DatabaseTooNewError(Path("newt.db"), 99, 12), 2),
    ],
)
def test_each_error_maps_to_its_message_and_status(error: NewtError, status: int) -> None:
    assert isinstance(error, NewtError)
    found = user_message(error)
    assert found is not None and found[1] == status
    assert found[0] == describe(error)  # the UI says what the CLI says
    assert type(error).__name__ not in found[0]


def test_a_bug_is_named_by_its_type() -> None:
    assert user_message(KeyError("x")) is None
    assert describe(KeyError("x")) == "KeyError: 'x'"


def test_a_hint_rides_with_the_message() -> None:
    error = ConfigError("config.toml line 3: bad key")
    error.hint = "see newt --help"
    assert user_message(error) == ("config.toml line 3: bad key (see newt --help)", 2)
