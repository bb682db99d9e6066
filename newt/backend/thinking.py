"""Separate a model's reasoning from its answer while the reply streams.

Reasoning arrives in one of two forms:

- a separate delta field, ``reasoning_content`` (llama-server with a reasoning
  format, vLLM, DeepSeek's API) or ``reasoning`` (Ollama, OpenRouter): the
  accumulator reads it directly;
- ``<think>…</think>`` at the start of the content (Qwen3 and DeepSeek-R1
  GGUFs served without a reasoning parser): `ThinkTagSplitter` below.

The tags can be cut at any character by the stream, so a piece that could
still become a tag is held back until the next delta decides it. Only a
``<think>`` that opens the reply (after whitespace) starts a thinking block:
a model writing about the tag later in its answer keeps its words.
"""

from __future__ import annotations

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"
REASONING_FIELDS = ("reasoning_content", "reasoning")


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is a proper start of `tag`."""
    for n in range(min(len(text), len(tag) - 1), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


class ThinkTagSplitter:
    """Feed content deltas; get (thinking, answer) text out, tags removed."""

    def __init__(self) -> None:
        self._state = "start"  # start | think | answer
        self._held = ""
        self._skip_space = False  # the blank lines after </think> are not the answer

    def feed(self, text: str) -> tuple[str, str]:
        buf, self._held = self._held + text, ""
        thinking: list[str] = []
        answer: list[str] = []
        while buf:
            if self._state == "start":
                stripped = buf.lstrip()
                if stripped.startswith(OPEN_TAG):
                    self._state, buf = "think", stripped[len(OPEN_TAG) :]
                elif OPEN_TAG.startswith(stripped):  # "", "<", "<th"…: not decided yet
                    self._held = buf
                    break
                else:
                    self._state = "answer"
            elif self._state == "think":
                end = buf.find(CLOSE_TAG)
                if end >= 0:
                    thinking.append(buf[:end])
                    buf = buf[end + len(CLOSE_TAG) :]
                    self._state, self._skip_space = "answer", True
                else:
                    keep = _partial_suffix(buf, CLOSE_TAG)
                    thinking.append(buf[: len(buf) - keep])
                    self._held = buf[len(buf) - keep :]
                    break
            else:
                if self._skip_space:
                    buf = buf.lstrip()
                    if not buf:
                        break
                    self._skip_space = False
                answer.append(buf)
                buf = ""
        return "".join(thinking), "".join(answer)

    def flush(self) -> tuple[str, str]:
        """The stream ended: what was held back is thinking inside an unclosed
        block, answer otherwise."""
        held, self._held = self._held, ""
        if self._state == "think":
            return held, ""
        if self._state == "start":
            self._state = "answer"
        return "", held if not self._skip_space else held.lstrip()
