"""The name the model calls an MCP tool by: ``server__tool``, a valid function name.

OpenAI-style function names must match ^[a-zA-Z0-9_-]{1,64}$ and be unique in
one request; servers name their tools freely, so newt rewrites and, when it
must, shortens them with a digest that keeps them stable from run to run.
"""

from __future__ import annotations

import hashlib
import re

_BAD_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
MAX_TOOL_NAME = 64


def qualified_name(server: str, tool: str, taken: set[str]) -> str:
    """server__tool as a valid, unique function name (^[a-zA-Z0-9_-]{1,64}$)."""
    base = f"{server}__{_BAD_NAME_CHARS.sub('_', tool) or 'tool'}"
    name = base
    if len(name) > MAX_TOOL_NAME or name in taken:
        digest = hashlib.sha1(tool.encode()).hexdigest()[:6]
        name = f"{base[: MAX_TOOL_NAME - 7]}_{digest}"
        counter = 2
        while name in taken:  # only if two long names share a digest prefix
            name = f"{base[: MAX_TOOL_NAME - 10]}_{digest}{counter:02d}"
            counter += 1
    return name
