"""A small MCP server for the tests, written with the same SDK newt uses.

Run as `python demo_server.py` it speaks stdio; `python demo_server.py --http PORT`
serves streamable HTTP on 127.0.0.1:PORT/mcp. Tools:

- echo(text): returns the text
- add(a, b): returns a + b
- slow(seconds): sleeps, then says so (for cancellation)
- block(seconds): blocks the whole server (it cannot notice newt leaving)
- big(chars): returns `chars` characters of text (for the result cap)
- picture(): returns an image (for the placeholder)
- crash(): the server process exits at once (for a dying server)
- whoami(): the process id, and the X-Demo header seen over HTTP
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image

# 1x1 transparent PNG
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)

server = MCPServer("demo")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep for the given seconds, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}s"


@server.tool()
async def block(seconds: float) -> str:
    """Hold the server's whole event loop (a badly behaved server: it cannot see stdin close)."""
    time.sleep(seconds)
    return f"blocked {seconds}s"


@server.tool()
def big(chars: int) -> str:
    """Return a text of the given length."""
    line = "0123456789 abcdefghij klmnopqrst uvwxyz ABCDEFGHIJ KLMNOPQRST UVWXYZ.\n"
    return (line * (chars // len(line) + 1))[:chars]


@server.tool()
def picture() -> Image:
    """Return a tiny PNG image."""
    return Image(data=_PNG, format="png")


@server.tool()
def crash() -> str:
    """Exit the server process at once, mid-call."""
    os._exit(3)


@server.tool()
def whoami(ctx: Context) -> str:
    """The server's process id and the X-Demo request header, if any."""
    header = ""
    request = getattr(ctx.request_context, "request", None)
    if request is not None:
        header = request.headers.get("x-demo", "")
    return f"pid={os.getpid()} x-demo={header}"


def main(argv: list[str]) -> None:
    if len(argv) >= 2 and argv[0] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[1]))
    else:
        server.run()


if __name__ == "__main__":
    main(sys.argv[1:])
