"""Model text never reaches a terminal with escape sequences in it."""

from __future__ import annotations

import pytest

from newt.text import StreamSanitizer, strip_terminal_escapes

NASTY = "safe \x1b]0;pwned\x07text\x1b[2J here\x1b[31m!\x1b]52;c;aGk=\x1b\\ end\r\x07\x9b1m"


def test_strip_removes_csi_osc_and_controls() -> None:
    assert strip_terminal_escapes(NASTY) == "safe text here! end"
    assert strip_terminal_escapes("tabs\tand\nnewlines stay") == "tabs\tand\nnewlines stay"
    assert strip_terminal_escapes("crlf\r\nline") == "crlf\nline"


@pytest.mark.parametrize("size", [1, 2, 3, 4, 7, 100])
def test_stream_sanitizer_handles_sequences_split_across_deltas(size: int) -> None:
    sanitizer = StreamSanitizer()
    out = "".join(sanitizer.feed(NASTY[i : i + size]) for i in range(0, len(NASTY), size))
    assert out + sanitizer.flush() == "safe text here! end"


def test_unterminated_sequence_is_dropped_at_the_end() -> None:
    sanitizer = StreamSanitizer()
    assert sanitizer.feed("visible \x1b]0;never closed") == "visible "
    assert sanitizer.flush() == ""
