"""A Hugging Face hub on 127.0.0.1 for the download tests, in the hub's URL layout.

HEAD and GET /{repo}/resolve/{revision}/{filename} answer with the headers
huggingface_hub reads (file_download.get_hf_file_metadata): ETag and
X-Linked-Etag (the LFS sha256), X-Linked-Size, X-Repo-Commit, Content-Length,
and Range requests get 206 with Content-Range. Faults on demand: `gated`
(401 with X-Error-Code: GatedRepo, as the hub answers), `drop_after` (the
first GET sends that many bytes and closes the connection), `corrupt` (other
bytes than the advertised sha256's). Every request is recorded.
"""

from __future__ import annotations

import hashlib
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def gguf_bytes(metadata: dict[str, str | int], padding: int = 0) -> bytes:
    """A minimal valid GGUF v3 (no tensors) with string / uint32 metadata, then zeros."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, len(metadata)))
    for key, value in metadata.items():
        raw = key.encode()
        out += struct.pack("<Q", len(raw)) + raw
        if isinstance(value, int):
            out += struct.pack("<II", 4, value)
        else:
            text = value.encode()
            out += struct.pack("<IQ", 8, len(text)) + text
    return bytes(out) + bytes(padding)


def write_gguf(path: Path, architecture: str, padding: int = 4096) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        gguf_bytes({"general.architecture": architecture, "general.name": path.stem}, padding)
    )
    return path


@dataclass
class Hub:
    files: dict[str, bytes] = field(default_factory=dict)  # "repo/filename" -> bytes
    gated: bool = False
    drop_after: int | None = None
    corrupt: bool = False
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    url: str = ""

    def sha(self, key: str) -> str:
        return hashlib.sha256(self.files[key]).hexdigest()


def serve(hub: Hub) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _file(self) -> tuple[str, bytes] | None:
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) != 5 or parts[2] != "resolve":
                return None
            key = f"{parts[0]}/{parts[1]}/{parts[4]}"
            data = hub.files.get(key)
            return (key, data) if data is not None else None

        def _answer(self, head: bool) -> None:
            hub.requests.append((self.command, self.path, self.headers.get("Range")))
            if hub.gated:
                body = b'{"error": "Access to model is restricted."}'
                self.send_response(401)
                self.send_header("X-Error-Code", "GatedRepo")
                self.send_header("X-Error-Message", "Access to model is restricted.")
                self.send_header("Content-Length", str(0 if head else len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)
                return
            found = self._file()
            if found is None:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            key, data = found
            sha = hub.sha(key)
            served = bytes(b ^ 0xFF for b in data) if hub.corrupt else data
            start = 0
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes="):
                start = int(rng[6:].split("-")[0])
            self.send_response(206 if start else 200)
            self.send_header("ETag", f'"{sha}"')
            self.send_header("X-Linked-Etag", f'"{sha}"')
            self.send_header("X-Linked-Size", str(len(data)))
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(len(data) - start))
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.end_headers()
            if head:
                return
            body = served[start:]
            if hub.drop_after is not None:
                cut, hub.drop_after = hub.drop_after, None
                self.wfile.write(body[:cut])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(body)

        def do_HEAD(self) -> None:
            self._answer(head=True)

        def do_GET(self) -> None:
            self._answer(head=False)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    # poll every 20 ms, as the fake server does: shutdown() returns at once, not in 0.5 s
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    return server


def serve_stand_in(name: str, rate_bps: int, port: int = 0) -> ThreadingHTTPServer:
    """For the README's pictures only: the hub's headers for catalogue model `name`
    (its size, its sha256), and that many zero bytes at `rate_bps`, Range honoured.
    A download from it runs, stops and resumes like a real one, and is refused at
    the end: zeros are not the model (nothing here reaches the real hub)."""
    import time

    from newt.local.models.catalogue import find

    model = find(name)
    assert model is not None and model.sha256, name
    size, chunk = model.size_bytes, 1 << 16

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, head: bool) -> None:
            if "/resolve/" not in self.path:  # e.g. the hub library's /api/agent-harnesses
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            rng = self.headers.get("Range") or ""
            start = int(rng[6:].split("-")[0]) if rng.startswith("bytes=") else 0
            self.send_response(206 if start else 200)
            for key, value in (("ETag", f'"{model.sha256}"'),
                               ("X-Linked-Etag", f'"{model.sha256}"'),
                               ("X-Linked-Size", str(size)), ("X-Repo-Commit", COMMIT),
                               ("Content-Length", str(size - start))):  # fmt: skip
                self.send_header(key, value)
            if start:
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            self.end_headers()
            sent, began = start, time.monotonic()
            while not head and sent < size:
                n = min(chunk, size - sent)
                self.wfile.write(bytes(n))
                sent += n
                ahead = (sent - start) / rate_bps - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)

        def do_HEAD(self) -> None:
            self._answer(head=True)

        def do_GET(self) -> None:
            self._answer(head=False)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


if __name__ == "__main__":  # python -m tests.support.fake_hub qwen2.5-1.5b 40 [PORT]
    import sys

    stand_in = serve_stand_in(sys.argv[1], int(float(sys.argv[2]) * 1_000_000),
                              int(sys.argv[3]) if len(sys.argv) > 3 else 0)  # fmt: skip
    print(f"stand-in hub on http://127.0.0.1:{stand_in.server_address[1]}", flush=True)
    stand_in.serve_forever()
