"""httpx clients that pay for TLS only when a TLS connection is made.

httpx builds a verifying SSL context for every client it creates, and loading
the CA bundle into it costs 30-50 ms of CPU on this project's machines: three
clients (chat, capability probe, embeddings) made that about a tenth of a
second of startup even for a plain `http://` server on localhost, where no
certificate is ever checked. newt's clients share one `LazyTrustContext`
instead: it verifies exactly like httpx's default (CERT_REQUIRED, host names
checked, the CA bundle from SSL_CERT_FILE / SSL_CERT_DIR or certifi), but loads
the bundle at its first TLS handshake, once per process. A plain-http session
never loads it; verification is never turned off.
"""

from __future__ import annotations

import os
import ssl
import threading
from typing import Any

import httpx


class LazyTrustContext(ssl.SSLContext):
    """A client TLS context whose trusted CAs load before the first handshake."""

    _lock = threading.Lock()

    loaded = False  # True once the CA bundle is in (set per instance)

    def __new__(cls) -> LazyTrustContext:
        # PROTOCOL_TLS_CLIENT: certificates required and host names checked,
        # as ssl.create_default_context() sets up for servers.
        return super().__new__(cls, ssl.PROTOCOL_TLS_CLIENT)

    def _load_trust(self) -> None:
        if self.loaded:
            return
        with self._lock:
            if self.loaded:
                return
            # The same sources, in the same order, as httpx's create_ssl_context.
            if os.environ.get("SSL_CERT_FILE"):
                self.load_verify_locations(cafile=os.environ["SSL_CERT_FILE"])
            elif os.environ.get("SSL_CERT_DIR"):
                self.load_verify_locations(capath=os.environ["SSL_CERT_DIR"])
            else:
                import certifi

                self.load_verify_locations(cafile=certifi.where())
            self.loaded = True

    # asyncio and anyio wrap BIOs, httpx's sync transport wraps sockets.
    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        self._load_trust()
        return super().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:
        self._load_trust()
        return super().wrap_socket(*args, **kwargs)


_shared: LazyTrustContext | None = None


def trust_context() -> LazyTrustContext:
    """The process's one client TLS context."""
    global _shared
    if _shared is None:
        _shared = LazyTrustContext()
    return _shared


def async_client(**kwargs: Any) -> httpx.AsyncClient:
    """`httpx.AsyncClient(**kwargs)` verifying TLS with the shared lazy context."""
    return httpx.AsyncClient(verify=trust_context(), **kwargs)


def sync_client(**kwargs: Any) -> httpx.Client:
    """`httpx.Client(**kwargs)` verifying TLS with the shared lazy context."""
    return httpx.Client(verify=trust_context(), **kwargs)
