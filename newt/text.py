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


# 8-bit C1 introducers become their 7-bit forms so one set of patterns covers both.
_C1_TO_7BIT = str.maketrans(
    {
        "\x9b": "\x1b[",
        "\x9d": "\x1b]",
        "\x90": "\x1bP",
        "\x98": "\x1bX",
        "\x9e": "\x1b^",
        "\x9f": "\x1b_",
        "\x9c": "\x1b\\",
    }
)


def strip_terminal_escapes(text: str) -> str:
    """Remove escape sequences and control characters, keep \\n and \\t."""
    text = text.translate(_C1_TO_7BIT).replace("\r\n", "\n")
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


# A sequence that has ended; anything else starting at an ESC may still be arriving.
_COMPLETE = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]
  | \x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)
  | \x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)
  | \x1b[ -/]*[0-OQ-WYZ\\`a-~]         # two-byte: not an introducer of the above
    """,
    re.VERBOSE,
)
_HOLD_LIMIT = 4096  # an unterminated sequence longer than this is dropped, not held forever


class StreamSanitizer:
    """`strip_terminal_escapes` for text that arrives in pieces.

    A stream can split an escape sequence across two deltas; stripping each
    delta alone would let the second half through. The tail from the last ESC
    is held back until the sequence completes (or the stream ends).
    """

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        buf = self._pending + text.translate(_C1_TO_7BIT)
        cut = buf.rfind("\x1b")
        if cut == -1 or _COMPLETE.match(buf, cut) or len(buf) - cut > _HOLD_LIMIT:
            self._pending = ""
            return strip_terminal_escapes(buf)
        self._pending = buf[cut:]
        return strip_terminal_escapes(buf[:cut])

    def flush(self) -> str:
        rest, self._pending = self._pending, ""
        return strip_terminal_escapes(rest)
