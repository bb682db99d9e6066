"""One error tree: every error newt raises for the user is a NewtError, and
one mapping gives the CLI's exit status and the UI's message."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import newt
from newt import errors
from newt.agent.errors import ConversationNotFound
from newt.backend.errors import RateLimitedError, UnreachableError
from newt.backend.models import ModelListUnavailable
from newt.chat_settings import SettingsError
from newt.cli.main import UsageError
from newt.config import ConfigError
from newt.errors import NewtError, user_message
from newt.importing.model import ImportFormatError
from newt.local.models.download import DownloadError
from newt.mcp.config import McpConfigError
from newt.memory.errors import NoteNotFound
from newt.store.errors import DatabaseTooNewError
from newt.ui.errors import describe

PACKAGE = Path(newt.__file__).resolve().parent
# Runs before newt is installed and imports nothing of newt, so its SetupError
# cannot derive from NewtError; newt translates it where it calls the package.
OUTSIDE = PACKAGE / "local" / "setup"


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
        (DownloadError("Could not reach the hub"), 1),
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


def test_a_class_hint_rides_unless_the_message_says_it() -> None:
    said = user_message(ConversationNotFound("no conversation id given"))
    assert said == ("no conversation id given (`newt list` shows the saved ones)", 2)
    said = user_message(ConversationNotFound("none; `newt list` shows the saved ones"))
    assert said == ("none; `newt list` shows the saved ones", 2)


def test_the_core_describe_is_the_uis() -> None:
    for exc in (NoteNotFound("kites"), KeyError("x"), RuntimeError()):
        assert errors.describe(exc) == describe(exc)


def _modules() -> list[tuple[str, ast.Module]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(OUTSIDE) or path.name == "__main__.py":
            continue
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append((name, ast.parse(path.read_text(encoding="utf-8"))))
    return found


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined at module level in newt (outside local/setup),
    by qualified name. Each module that defines a class is imported to ask."""
    classes: dict[str, type[BaseException]] = {}
    for name, tree in _modules():
        defined = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
        if not defined:
            continue
        module = importlib.import_module(name)
        for cls_name in defined:
            cls = getattr(module, cls_name)
            if isinstance(cls, type) and issubclass(cls, BaseException):
                classes[f"{name}.{cls_name}"] = cls
    return classes


def test_every_public_exception_class_is_a_newt_error() -> None:
    """A public exception class is one that other modules catch or let through to
    the CLI and the UI: it must say its message the one way (`user_message`).
    One that never reaches the user is private to its module (a leading _)."""
    classes = _exception_classes()
    # the scan would be worthless if it found nothing, or missed a known branch
    assert {"newt.errors.NewtError", "newt.local.models.download.DownloadError"} <= set(classes)
    outside = sorted(
        name
        for name, cls in classes.items()
        if not name.rsplit(".", 1)[1].startswith("_") and not issubclass(cls, NewtError)
    )
    assert outside == []


def test_a_private_exception_class_stays_in_its_module() -> None:
    private = {
        tuple(name.rsplit(".", 1))
        for name in _exception_classes()
        if name.rsplit(".", 1)[1].startswith("_")
    }
    imported = sorted(
        f"{name} imports {node.module}.{alias.name}"
        for name, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if (node.module, alias.name) in private
    )
    assert imported == []
