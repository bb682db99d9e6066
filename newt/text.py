"""Make model text safe for a terminal.

Text from a model (or from a record it quoted) must never reach the terminal
raw: an escape sequence could move the cursor, change the title, write to the
clipboard (OSC 52) or hide text. We remove ANSI/VT escape sequences and other
C0/C1 control characters, keeping newlines and tabs.
"""

from __future__ import annotations

import re

# CSI ... final byte; OSC ... BEL/ST; DCS/SOS/PM/APC ... ST; two-byte ESC sequences.
_ESCAPES = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]              # CSI
  | \x9b[0-?]*[ -/]*[@-~]                # 8-bit CSI
  | \x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?   # OSC
  | \x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?     # 8-bit OSC
  | \x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?        # DCS, SOS, PM, APC
  | [\x90\x98\x9e\x9f][^\x1b\x9c]*(?:\x1b\\|\x9c)?
  | \x1b[ -/]*[0-~]                      # other ESC sequences
  | \x1b                                 # a lone ESC
    """,
    re.VERBOSE,
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_terminal_escapes(text: str) -> str:
    """Remove escape sequences and control characters, keep \\n and \\t."""
    text = text.replace("\r\n", "\n")
    return _CONTROLS.sub("", _ESCAPES.sub("", text))
