"""Stands in for a newt process in the lifetime tests.

Starts the demo server through McpManager (so through the same launcher and
SDK as newt), prints the server's pid, then waits inside a tool call that
blocks the server (so it cannot notice its stdin closing), closing the
manager on the way out as newt does. The test then kills or
interrupts this process and checks that the server is gone.
"""

from __future__ import annotations

import asyncio
import sys

from newt.mcp.config import parse_mcp_section
from newt.mcp.manager import McpManager
from tests.support.mcp_servers import stdio_server_table


async def main() -> None:
    config = parse_mcp_section({"servers": {"demo": stdio_server_table(approve="always")}})
    manager = McpManager(config)
    try:
        await manager.ensure_started()
        whoami = await manager.call("demo__whoami", {})
        print(whoami.text.split()[0], flush=True)  # "pid=N"
        await manager.call("demo__block", {"seconds": 120})
    finally:
        await manager.aclose()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(130)
