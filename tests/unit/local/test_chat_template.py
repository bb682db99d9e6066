"""A brace pair doubled inside a Jinja string literal is halved; expressions are not."""

from __future__ import annotations

from newt.local.chat_template import corrected

QWEN_LINE = (
    '{{- "\\n<tool_call>\\n{{\\"name\\": <function-name>, \\"arguments\\":'
    ' <args-json-object>}}\\n</tool_call><|im_end|>\\n" }}'
)


def test_a_call_shape_in_doubled_braces_inside_a_string_is_halved() -> None:
    fixed = corrected("{%- if tools %}" + QWEN_LINE + "{%- endif %}")
    assert fixed is not None
    assert '{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n' in fixed
    assert "{{\\" not in fixed and fixed.startswith('{%- if tools %}{{- "')


def test_a_template_without_one_is_left_as_it_is() -> None:
    plain = "{%- for m in messages %}{{'<|im_start|>' + m['role'] + '\\n'}}{%- endfor %}"
    assert corrected(plain) is None
    assert corrected('{{ "literal" }}{{"<|im_end|>"}}') is None
