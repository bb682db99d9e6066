"""A tool's result as text the model can read: text as is, everything else a placeholder.

Images, audio and binary resources would cost the model thousands of tokens
of base64 it cannot use, so they become one line saying what was left out.
Nothing is cut here: the turn cuts what the model gets to its share of the
window (newt.agent.tools.builtin.cap_result), once, with one note.
"""

from __future__ import annotations

import json

from mcp.types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)


def _placeholder(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        size = len(block.data or "") * 3 // 4  # base64
        return f"[{block.type} omitted: {block.mime_type or block.type}, about {size} bytes]"
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if isinstance(resource, TextResourceContents):
            return f"[resource {resource.uri}]\n{resource.text}"
        return f"[resource omitted: {resource.uri}, {resource.mime_type or 'binary'}]"
    if isinstance(block, ResourceLink):
        return f"[resource link: {block.uri} {block.name}]".strip()
    return f"[{type(block).__name__} content omitted]"  # a kind newer than this SDK


def result_text(result: CallToolResult) -> str:
    """All content of a CallToolResult as text; non-text blocks become placeholders."""
    parts = [_placeholder(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(p for p in parts if p) or "(the tool returned nothing)"
