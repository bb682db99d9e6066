"""Copying inside tmux, and saying honestly where the text went.

Textual's `copy_to_clipboard` writes OSC 52 to the terminal. Inside tmux that
sequence reaches tmux, which passes it on only with `set-clipboard on`; under
the default, `external`, it drops what an application sends, so "Copied" was
a claim nothing backed. Inside tmux newt therefore also hands the text to tmux
itself (`tmux load-buffer`): it lands in tmux's paste buffer (prefix ] pastes
it) and, with `-w` and `set-clipboard` `on` or `external`, tmux forwards it
to the outer terminal's clipboard (when that terminal accepts OSC 52). The
sentence returned says which of these happened.
"""

from __future__ import annotations

import os
import subprocess

TMUX_TIMEOUT_S = 2.0


def _tmux(*args: str, text: str | None = None) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(
            ["tmux", *args],
            input=text,
            capture_output=True,
            text=True,
            timeout=TMUX_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def copy_in_tmux(text: str, what: str) -> tuple[str, bool] | None:
    """Inside tmux ($TMUX set): put `text` in tmux's paste buffer (and, where
    tmux's set-clipboard allows, the terminal's clipboard); the sentence to
    show and whether it worked. None outside tmux (OSC 52 alone is the way)."""
    if not os.environ.get("TMUX"):
        return None
    shown = _tmux("show-options", "-sv", "set-clipboard")
    mode = shown.stdout.strip() if shown is not None and shown.returncode == 0 else ""
    forward = mode in ("on", "external")
    loaded = _tmux("load-buffer", *(["-w"] if forward else []), "-", text=text)
    if loaded is None or loaded.returncode != 0:
        why = (loaded.stderr.strip() if loaded is not None else "") or "tmux did not answer"
        return (
            f"Could not copy {what}: tmux refused it ({why}), and with set-clipboard "
            f"{mode or 'unknown'} tmux drops the terminal copy newt sends.",
            False,
        )
    if forward:
        return (
            f"Copied {what} to tmux's paste buffer (prefix ] pastes it); tmux passes it "
            "on to your terminal's clipboard if the terminal accepts that.",
            True,
        )
    return (
        f"Copied {what} to tmux's paste buffer only (prefix ] pastes it): tmux's "
        "set-clipboard is off, so the system clipboard was not set.",
        True,
    )
