"""What `/copy` and a focused message's keys put on the clipboard.

`/copy [N] [code [M]]`: reply N counting back from the newest (1, the
default, is the last reply), or its code block M (1 is the first block of
that reply). On a focused message, `c` copies the message and `1`-`9` its
code blocks. The clipboard write itself is Textual's
`App.copy_to_clipboard` (OSC 52, which works over SSH and inside tmux with
`set-clipboard on`), and inside tmux also `tmux load-buffer`
(ui/tmux_clipboard.py); this module only decides the text and its description.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from newt.ui.widgets.entries import AssistantEntry, Entry

USAGE = "Usage: /copy [N] [code [M]] (reply N back from the last; its code block M)"


@dataclass(frozen=True)
class CodeBlock:
    code: str
    language: str


def code_blocks(markdown: str) -> list[CodeBlock]:
    """Fenced and indented code blocks of a reply, in order, as their text."""
    # the renderer's parser, imported on first use: not needed for the first frame
    from newt.ui.widgets.markdown_blocks import parse

    blocks = []
    for token in parse(markdown):
        if token.type in ("fence", "code_block"):
            language = token.info.split()[0] if token.info.strip() else ""
            blocks.append(CodeBlock(token.content.removesuffix("\n"), language))
    return blocks


@dataclass(frozen=True)
class CopyRequest:
    reply: int = 1  # 1 = the last reply
    code: int | None = None  # None = the whole reply


def parse_copy(arg: str) -> CopyRequest:
    """`/copy`'s argument; ValueError (with the usage) when it is not one."""
    words = arg.lower().split()
    reply, code = 1, None
    if words and words[0].isdigit():
        reply = int(words.pop(0))
    if words and words[0] == "code":
        words.pop(0)
        code = 1
        if words and words[0].isdigit():
            code = int(words.pop(0))
    if words or reply < 1 or (code is not None and code < 1):
        raise ValueError(USAGE)
    return CopyRequest(reply, code)


def lines(text: str) -> str:
    n = text.count("\n") + 1
    return f"{n} line{'s' if n != 1 else ''}"


def pick_code(text: str, number: int, whose: str) -> tuple[str, str]:
    """(code, description) of block `number` of `text`; ValueError if there is none."""
    blocks = code_blocks(text)
    if not blocks:
        raise ValueError(f"{whose[0].upper()}{whose[1:]} has no code block.")
    if number > len(blocks):
        raise ValueError(
            f"{whose[0].upper()}{whose[1:]} has {len(blocks)} code block"
            f"{'s' if len(blocks) != 1 else ''}, not {number}."
        )
    block = blocks[number - 1]
    language = f"{block.language}, " if block.language else ""
    return block.code, f"code block {number} of {whose} ({language}{lines(block.code)})"


def resolve_copy(entries: Sequence[Entry], request: CopyRequest) -> tuple[str, str]:
    """(text, description) for a request over the log's entries; ValueError to explain."""
    replies = [e for e in entries if isinstance(e, AssistantEntry) and e.text.strip()]
    if not replies:
        raise ValueError("There is no reply to copy yet.")
    if request.reply > len(replies):
        n = len(replies)
        have = "is only 1 reply" if n == 1 else f"are only {n} replies"
        raise ValueError(f"There {have}; /copy {n} is the first.")
    text = replies[-request.reply].text
    whose = "the last reply" if request.reply == 1 else f"reply {request.reply} back"
    if request.code is not None:
        return pick_code(text, request.code, whose)
    return text, f"{whose} ({lines(text)})"
