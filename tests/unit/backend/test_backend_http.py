"""newt's httpx clients: no CA bundle load for plain http, full verification for https."""

from __future__ import annotations

import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from newt.agent.session.chat_session import ChatSession
from newt.backend import http as newt_http
from newt.backend.http import LazyTrustContext, async_client
from newt.config import load_config
from tests.support.fake_openai import FakeOpenAI, Reply


@pytest.fixture
def ca_loads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every CA bundle load in this process (httpx's default context does one per client)."""
    loads: list[Any] = []
    original = ssl.SSLContext.load_verify_locations

    def counting(self: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
        loads.append((args, kwargs))
        original(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)
    monkeypatch.setattr(newt_http, "_shared", None)  # a fresh process-wide context
    return loads


async def test_a_plain_http_session_loads_no_ca_bundle(
    fake_openai: FakeOpenAI, ca_loads: list[Any], tmp_path: Path
) -> None:
    # The whole session: chat client, capability probe, embeddings queue and a turn.
    fake_openai.script(Reply(text="hello there"))
    config = load_config(None, base_url=fake_openai.base_url, model="fake-model")
    async with await ChatSession.open(config) as session:
        events = [event async for event in session.turns.send("hi")]
    assert any(type(e).__name__ == "TurnDone" for e in events)
    assert fake_openai.chat_requests
    assert ca_loads == []
    assert newt_http.trust_context().loaded is False


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that no public CA signed (made with the openssl CLI)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b'{"data": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def https_url(self_signed: tuple[Path, Path]) -> Iterator[str]:
    cert, key = self_signed
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/v1/models"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_https_still_verifies_certificates(
    https_url: str, ca_loads: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    async with async_client(timeout=5) as http:
        assert ca_loads == []  # nothing loaded until a TLS connection is made
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await http.get(https_url)
    assert len(ca_loads) == 1  # the bundle was loaded for that handshake, once
    context = newt_http.trust_context()
    assert context.loaded and context.cert_store_stats()["x509_ca"] > 0


async def test_https_trusts_ssl_cert_file_like_httpx(
    https_url: str,
    self_signed: tuple[Path, Path],
    ca_loads: list[Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(self_signed[0]))
    async with async_client(timeout=5) as http:
        response = await http.get(https_url)
        assert response.json() == {"data": []}
        await http.get(https_url)
    assert len(ca_loads) == 1  # once per process, not per connection


def test_the_lazy_context_verifies_like_the_default() -> None:
    context = LazyTrustContext()
    default = ssl.create_default_context()
    assert context.verify_mode == default.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is default.check_hostname is True
    assert context.minimum_version == default.minimum_version
    assert context.options == default.options
