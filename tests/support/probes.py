"""Finding capability probes in source: `getattr(obj, "name", ...)` or
`hasattr(obj, "name")` with the name written out."""

from __future__ import annotations

import ast

PROBES = ("getattr", "hasattr")


def probes(source: str, where: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in PROBES
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            found.append(f"{where}:{node.lineno}: {node.func.id}(..., {node.args[1].value!r})")
    return found
