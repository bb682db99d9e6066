"""A tool's result as text the model can read: text as is, everything else a placeholder.

Images, audio and binary resources would cost the model thousands of tokens
of base64 it cannot use, so they become one line saying what was left out.
Nothing is cut here: the turn cuts what the model gets to its share of the
window (newt.agent.tools.cap_result), once, with one note.
"""

from __future__ import annotations

import json
from typing import Any


def _placeholder(block: Any) -> str:
    kind = getattr(block, "type", type(block).__name__)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        data = getattr(block, "data", "") or ""
        size = len(data) * 3 // 4  # base64
        mime = getattr(block, "mime_type", "") or kind
        return f"[{kind} omitted: {mime}, about {size} bytes]"
    if kind == "resource":
        resource = getattr(block, "resource", None)
        uri = str(getattr(resource, "uri", ""))
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return f"[resource {uri}]\n{text}"
        mime = getattr(resource, "mime_type", None) or "binary"
        return f"[resource omitted: {uri}, {mime}]"
    if kind == "resource_link":
        return f"[resource link: {getattr(block, 'uri', '')} {getattr(block, 'name', '')}]".strip()
    return f"[{kind} content omitted]"


def result_text(result: Any) -> str:
    """All content of a CallToolResult as text; non-text blocks become placeholders."""
    parts = [_placeholder(block) for block in getattr(result, "content", None) or []]
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(p for p in parts if p) or "(the tool returned nothing)"
