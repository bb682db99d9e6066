"""The first metadata of a GGUF file: enough to tell a chat model from an embedding model.

The layout is ggml's docs/gguf.md: "GGUF", a uint32 version (2 or 3), uint64
tensor and key-value counts, then key-value pairs (a uint64-length string key,
a uint32 type, the value), all little-endian. Only the pairs before the
tokenizer's are read: they hold general.architecture and the sizes, and the
tokenizer's arrays can be megabytes. Why our own reader: the `gguf` package
needs numpy and reads the whole file's index.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

MAGIC = b"GGUF"
# value type -> struct format of a scalar
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
           10: "<Q", 11: "<q", 12: "<d"}  # fmt: skip
STRING, ARRAY = 8, 9
MAX_KEYS = 256  # a header with more before the tokenizer is not one we know
MAX_STRING = 1 << 20
CHAT_TEMPLATE = "tokenizer.chat_template"
# Architectures that only embed (llama.cpp's names), and vision projectors.
EMBEDDING_ARCHITECTURES = frozenset({
    "bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "modern-bert",
    "neo-bert", "t5encoder", "gemma-embedding", "clip", "wavtokenizer-dec",
})  # fmt: skip


class _NotGGUF(ValueError):
    """The file is not a GGUF file newt can read. Private: callers catch ValueError,
    and skip the file (it never reaches the user)."""


@dataclass
class GGUFInfo:
    version: int
    metadata: dict[str, object] = field(default_factory=dict)

    @property
    def architecture(self) -> str:
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else ""

    @property
    def name(self) -> str:
        value = self.metadata.get("general.name")
        return value if isinstance(value, str) else ""

    @property
    def context_length(self) -> int:
        """The window the model was trained for (0 when the header does not say)."""
        value = self.metadata.get(f"{self.architecture}.context_length")
        return value if isinstance(value, int) else 0

    @property
    def is_embedding(self) -> bool:
        """Embedding-only: an embedding architecture, a pooling type, or a vision projector."""
        arch = self.architecture
        return (
            arch in EMBEDDING_ARCHITECTURES
            or f"{arch}.pooling_type" in self.metadata
            or self.metadata.get("general.type") == "mmproj"
        )


def read_info(path: Path, *, chat_template: bool = False) -> GGUFInfo:
    """The version and first key-value pairs of the GGUF at `path`; ValueError if it
    is not one or cannot be read. With `chat_template`, the reading goes on past
    the tokenizer's arrays (skipped) for `tokenizer.chat_template` too."""
    try:
        with open(path, "rb") as f:
            return _read(f, chat_template)
    except (OSError, struct.error, UnicodeDecodeError) as exc:
        raise _NotGGUF(f"{path}: {exc}") from exc


def _read(f: BinaryIO, chat_template: bool = False) -> GGUFInfo:
    if f.read(4) != MAGIC:
        raise _NotGGUF("no GGUF magic")
    (version,) = struct.unpack("<I", _exact(f, 4))
    if version not in (2, 3):
        raise _NotGGUF(f"GGUF version {version} is not supported")
    _tensors, n_kv = struct.unpack("<QQ", _exact(f, 16))
    info = GGUFInfo(version)
    for _ in range(n_kv if chat_template else min(n_kv, MAX_KEYS)):
        key = _string(f)
        if key.startswith("tokenizer.") and not chat_template:
            break
        (kind,) = struct.unpack("<I", _exact(f, 4))
        if key == CHAT_TEMPLATE and kind == STRING:
            info.metadata[key] = _exact(f, struct.unpack("<Q", _exact(f, 8))[0]).decode("utf-8")
            break
        info.metadata[key] = _value(f, kind)
    return info


def _exact(f: BinaryIO, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise _NotGGUF("the header ends early")
    return data


def _string(f: BinaryIO) -> str:
    (n,) = struct.unpack("<Q", _exact(f, 8))
    if n > MAX_STRING:
        raise _NotGGUF("a header string is implausibly long")
    return _exact(f, n).decode("utf-8")


def _value(f: BinaryIO, kind: int) -> object:
    if kind in SCALARS:
        fmt = SCALARS[kind]
        return struct.unpack(fmt, _exact(f, struct.calcsize(fmt)))[0]
    if kind == STRING:
        return _string(f)
    if kind == ARRAY:
        (item, n) = struct.unpack("<IQ", _exact(f, 12))
        if item in SCALARS:  # skipped, not kept: nothing newt reads is an array
            f.seek(struct.calcsize(SCALARS[item]) * n, 1)
        else:
            for _ in range(n):
                _value(f, item)
        return None
    raise _NotGGUF(f"unknown GGUF value type {kind}")
