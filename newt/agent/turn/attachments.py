"""`@path` in a prompt: a text file's content rides along, an image as an image part.

What a word may be: `@` after a space (or at the start), then a path, or a
quoted path (`@"my notes.txt"`); relative to the working directory, `~`
expanded. A word that names no file and does not look like a path (`@alice`)
is left alone; one that looks like a path (a `/`, a `.` or a `~`) and is
missing is an error, as is a binary or oversized file: nothing is sent.

Text files are appended to the prompt as blocks, and the prompt is stored
with them as sent, so the restore, the working set and recall see exactly
what the model saw. All of them together may take ATTACHMENT_WINDOW_SHARE of
the context window: the rest keeps room for the system prompt and notes, the
reply reserve (up to a quarter), recall capsules (an eighth) and a few recent
turns, so one attachment never folds the whole conversation away.

Images (png, jpeg, gif, webp) become OpenAI `image_url` parts with a data URL,
in this request only; the stored prompt gets a reference line and the turn
keeps {path, size, sha256, mime}: an image is never written to the database.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from newt.agent.errors import SessionError

# Share of the context window all text attachments of one prompt may take.
ATTACHMENT_WINDOW_SHARE = 0.25
# Never read more than this from a file that claims to be text.
MAX_TEXT_BYTES = 4 * 1024 * 1024
# OpenAI's limit per image is 20 MB; a data URL is a third larger than the file
# and travels in one request body, so newt stays well below.
MAX_IMAGE_BYTES = 10 * 1024 * 1024
# What an image is assumed to cost in the prompt before the backend reports
# (OpenAI: 85-1,105 for one 512-2,048 px image; Gemma 3's projector: 256).
IMAGE_TOKENS_ESTIMATE = 768
_SNIFF_BYTES = 8192

_MENTION = re.compile(r'(?:(?<=\s)|^)@(?:"([^"\n]+)"|(\S+))')
_TRAILING = ".,;:!?)]}'\""

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


class AttachmentError(SessionError):
    """A prompt's attachment cannot be sent; nothing was."""


@dataclass
class PreparedPrompt:
    """The prompt as it will be sent and stored, and what rides along."""

    text: str
    refs: list[dict[str, Any]] = field(default_factory=list)
    image_parts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def image_tokens(self) -> int:
        return IMAGE_TOKENS_ESTIMATE * len(self.image_parts)


def mentions(text: str) -> list[tuple[str, str]]:
    """(the word as typed, the path it names) for each `@path` in `text`."""
    return [(m.group(0), m.group(1) or m.group(2)) for m in _MENTION.finditer(text)]


def image_mime(head: bytes) -> str | None:
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def _resolve(word: str, cwd: Path) -> tuple[Path, str] | None:
    """The file a mention names and the word that named it (trailing
    punctuation is tried without: "see @notes.txt.")."""
    for candidate in (word, word.rstrip(_TRAILING)):
        if candidate:
            path = Path(os.path.expanduser(candidate))
            path = path if path.is_absolute() else cwd / path
            if path.exists():
                return path, candidate
    return None


def _looks_like_path(word: str) -> bool:
    word = word.rstrip(_TRAILING)
    return "/" in word or word.startswith("~") or bool(re.search(r"\.\w{1,8}$", word))


def prepare(
    text: str,
    *,
    cwd: Path,
    context_tokens: int,
    tokens_for: Callable[[str], int],
    images: bool | None,
    images_refused: str = "",
) -> PreparedPrompt:
    """Expand the `@path` mentions of `text`. `images`: whether the backend is
    known to take them (None: not known yet, try)."""
    prepared = PreparedPrompt(text)
    blocks: list[str] = []
    share = int(context_tokens * ATTACHMENT_WINDOW_SHARE)
    used = 0
    seen: set[Path] = set()
    for typed, word in mentions(text):
        found = _resolve(word, cwd)
        if found is None:
            if _looks_like_path(word):
                raise AttachmentError(f"{typed}: no such file (relative to {cwd})")
            continue
        path, shown = found
        if path.is_dir():
            raise AttachmentError(f"{typed} is a directory; attach files one by one")
        if path in seen:
            continue
        seen.add(path)
        data, mime = _read(path, typed)
        digest = hashlib.sha256(data).hexdigest()
        ref: dict[str, Any] = {"path": str(path), "size": len(data), "sha256": digest}
        if mime is not None:
            if images is False:
                raise AttachmentError(
                    f"{typed}: this model does not accept images"
                    + (f" (it answered: {images_refused})" if images_refused else "")
                    + "; remove the image to send the rest"
                )
            ref.update(kind="image", mime=mime)
            prepared.image_parts.append(image_part(data, mime))
            blocks.append(f"[image {shown}: {len(data):,} bytes, sha256 {digest[:12]}]")
        else:
            content = _decode(data, typed)
            cost = tokens_for(content)
            if used + cost > share:
                raise AttachmentError(
                    f"{typed} is too large: about {cost:,} tokens, and attachments may "
                    f"take {share - used:,} more (a quarter of the {context_tokens:,}-token "
                    "context window, so the conversation and the reply still fit)"
                )
            used += cost
            ref.update(kind="text", tokens=cost)
            blocks.append(f'<attachment path="{shown}">\n{content.rstrip()}\n</attachment>')
        prepared.refs.append(ref)
    if blocks:
        at = len(text.rstrip())
        prepared.text = text.rstrip() + "\n\n" + "\n\n".join(blocks)
        for ref in prepared.refs:
            ref["at"] = at
    return prepared


def typed_prompt(user: str, refs: list[dict[str, Any]]) -> str:
    """A stored prompt without the attachment blocks newt appended to it."""
    starts = [int(a["at"]) for a in refs if isinstance(a.get("at"), int)]
    return user[: min(starts)].rstrip() if starts else user


def attachment_names(refs: list[dict[str, Any]]) -> list[str]:
    return [Path(str(a.get("path", "?"))).name for a in refs]


def image_part(data: bytes, mime: str) -> dict[str, Any]:
    url = f"data:{mime};base64," + base64.b64encode(data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


def reload_images(refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The image parts of a stored turn (regenerate), read again by reference:
    the file must still be there with the same hash."""
    parts = []
    for ref in refs:
        if ref.get("kind") != "image":
            continue
        path = Path(str(ref.get("path")))
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise AttachmentError(f"the attached image {path} is gone ({exc.strerror})") from exc
        if hashlib.sha256(data).hexdigest() != ref.get("sha256"):
            raise AttachmentError(
                f"the attached image {path} changed since it was sent; /edit the prompt instead"
            )
        parts.append(image_part(data, str(ref.get("mime"))))
    return parts


def _read(path: Path, typed: str) -> tuple[bytes, str | None]:
    """The file's bytes and its image type (None: not an image)."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(_SNIFF_BYTES)
            mime = image_mime(head)
            limit = MAX_IMAGE_BYTES if mime else MAX_TEXT_BYTES
            if size > limit:
                raise AttachmentError(
                    f"{typed} is too large ({size:,} bytes; newt attaches up to {limit:,})"
                )
            return head + f.read(), mime
    except OSError as exc:
        raise AttachmentError(f"{typed} cannot be read ({exc.strerror})") from exc


def _decode(data: bytes, typed: str) -> str:
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise AttachmentError(
            f"{typed} is a binary file; newt attaches text files and png/jpeg/gif/webp images"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AttachmentError(
            f"{typed} is not UTF-8 text (byte {exc.start}); newt attaches text files "
            "and png/jpeg/gif/webp images"
        ) from exc


def complete_path(word: str, cwd: Path, limit: int = 20) -> list[str]:
    """Completions for a partly typed `@path` word (without the `@`): entries of
    its directory that start with its last part; directories end with `/`."""
    expanded = os.path.expanduser(word)
    head, _, tail = expanded.rpartition("/")
    typed_head = word.rpartition("/")[0]
    base = Path(head or ("/" if expanded.startswith("/") else "."))
    base = base if base.is_absolute() else cwd / base
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    out = []
    for name in names:
        if not name.startswith(tail) or (name.startswith(".") and not tail.startswith(".")):
            continue
        full = f"{typed_head}/{name}" if typed_head or word.startswith("/") else name
        if (base / name).is_dir():
            full += "/"
        out.append(full)
        if len(out) >= limit:
            break
    return out
