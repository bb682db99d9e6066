"""MCP costs: what a configured server adds to a turn and to exit.

    python benchmarks/mcp_bench.py

Against the demo server of tests/support/mcp_servers (the same SDK as most Python MCP
servers), over stdio and over streamable HTTP on loopback:

  import  importing newt.mcp.manager (the SDK); paid only when a config has
          servers and the first turn needs tools.           target < 1.5 s
  start   first ensure_started(): spawn, handshake, tools/list.
                                                            target < 3 s
  call    median and worst of 50 small tool calls.         target < 50 ms
  cancel  cancelling a call of a 60 s tool until the caller is free.
                                                            target < 0.5 s
  stop    aclose(): the server asked to exit and reaped.   target < 1 s
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def measure_import() -> float:
    code = (
        "import time; t = time.perf_counter(); import newt.mcp.manager; "
        "print(time.perf_counter() - t)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    return float(out.stdout.strip())


async def measure(table: dict[str, object]) -> dict[str, float]:
    from newt.mcp.config import parse_mcp_section
    from newt.mcp.manager import McpManager

    manager = McpManager(parse_mcp_section({"servers": {"demo": table}}))
    figures: dict[str, float] = {}
    t = time.perf_counter()
    await manager.ensure_started()
    figures["start"] = time.perf_counter() - t
    assert manager.tools(), manager.servers()
    times = []
    for i in range(50):
        t = time.perf_counter()
        await manager.call("demo__add", {"a": i, "b": 1})
        times.append(time.perf_counter() - t)
    figures["call median"] = statistics.median(times)
    figures["call worst"] = max(times)
    task = asyncio.create_task(manager.call("demo__slow", {"seconds": 60}))
    await asyncio.sleep(0.3)
    t = time.perf_counter()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    figures["cancel"] = time.perf_counter() - t
    t = time.perf_counter()
    await manager.aclose()
    figures["stop"] = time.perf_counter() - t
    return figures


def main() -> None:
    from tests.support.mcp_servers import http_demo_server, stdio_server_table

    print(f"import  {measure_import():.3f} s")
    runs = {"stdio": stdio_server_table()}
    with http_demo_server() as (url, _proc):
        runs["http"] = {"url": url}
        for name, table in runs.items():
            figures = asyncio.run(measure(table))
            print(name.ljust(6), "  ".join(f"{k} {v * 1000:.1f} ms" for k, v in figures.items()))


if __name__ == "__main__":
    main()
