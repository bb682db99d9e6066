"""A listed MCP tool made fit to offer: its input schema cleaned, its description cut.

Schemas and descriptions ride in every request, so what the model does not
need (a title the function name already says, a description past 1024
characters) is dropped; a schema that is not an object becomes an empty one.
"""

from __future__ import annotations

from typing import Any

from newt.mcp.naming import qualified_name
from newt.mcp.types import McpTool

MAX_DESCRIPTION_CHARS = 1024
"""Tool descriptions are sent with every request; a long one is cut to this."""


def parameters(schema: Any) -> dict[str, Any]:
    """The tool's input schema as a JSON-schema object the backend accepts."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {}}
    params = dict(schema)
    params.setdefault("type", "object")
    if params.get("type") == "object":
        params.setdefault("properties", {})
    params.pop("title", None)  # the function name already says it; saves tokens
    return params


def description(text: str | None) -> str:
    text = (text or "").strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return text


def offered_tool(server: str, listed: Any, taken: set[str]) -> McpTool:
    """One tool of a server's tools/list page as newt offers it (`taken`: names so far)."""
    return McpTool(
        server,
        listed.name,
        qualified_name(server, listed.name, taken),
        description(listed.description),
        parameters(listed.input_schema),
    )
