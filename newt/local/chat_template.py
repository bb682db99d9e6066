"""The chat template newt's own llama-server renders: the model's, checked and corrected.

A model's prompt is rendered from the Jinja template in its GGUF, and a small
model copies what that prompt shows it. Qwen2.5's template shows the shape of
a tool call inside a Jinja string literal as `{{\\"name\\": <function-name>,
...}}`: inside a string, `{{` is not an expression but two braces, so the
model reads (and copies) a call in doubled braces, which the server's tool
parser then does not take as a call. `corrected` finds a brace pair doubled
inside a string literal (where the quotes are escaped, `\\"`, so it can only
be text) and halves it; `template_args` hands llama-server the corrected copy
(`--chat-template-file`, written once per template into the cache), or
nothing when the model's own template needs no correction.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from newt.local.models.gguf import CHAT_TEMPLATE, read_info

# A brace pair around text with escaped quotes: literal text inside a Jinja string.
_DOUBLED_IN_STRING = re.compile(r'\{\{(\\"[^{}]*?(?:\{[^{}]*\}[^{}]*?)*)\}\}')


def corrected(template: str) -> str | None:
    """The template with every brace pair doubled inside a string literal halved;
    None when it has none."""
    fixed = _DOUBLED_IN_STRING.sub(lambda m: "{" + m[1] + "}", template)
    return fixed if fixed != template else None


def template_args(model: Path, cache: Path) -> list[str]:
    """llama-server's arguments for a corrected copy of `model`'s chat template, or []
    when it needs none (or cannot be read: the server then uses the model's own)."""
    try:
        template = read_info(model, chat_template=True).metadata.get(CHAT_TEMPLATE)
    except ValueError:
        return []
    if not isinstance(template, str) or (fixed := corrected(template)) is None:
        return []
    digest = hashlib.sha256(fixed.encode()).hexdigest()[:16]
    path = cache / "chat-templates" / f"{digest}.jinja"
    if not path.is_file():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(".part")
            partial.write_text(fixed, encoding="utf-8")
            partial.replace(path)
        except OSError:  # a read-only cache: the model's own template, as before
            return []
    return ["--jinja", "--chat-template-file", str(path)]
