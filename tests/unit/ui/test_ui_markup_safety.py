"""Text from the model or the user is never parsed as Textual markup."""

from __future__ import annotations

from textual.app import App, ComposeResult

from newt.ui.widgets.entries import ToolCallEntry
from newt.ui.widgets.messages import ToolCallBlock

NASTY = {"query": "[/red] [@click=app.quit]click me[/] [b]bold"}


class _Host(App[None]):
    def __init__(self, call: ToolCallEntry) -> None:
        super().__init__()
        self.call = call

    def compose(self) -> ComposeResult:
        yield ToolCallBlock(self.call)


async def test_tool_arguments_with_markup_are_shown_literally() -> None:
    call = ToolCallEntry("c1", "recall_memory", dict(NASTY))
    app = _Host(call)
    errors: list[str] = []
    async with app.run_test() as pilot:
        app.notify = lambda message, **kw: errors.append(message)  # type: ignore[method-assign]
        block = app.query_one(ToolCallBlock)
        title = block._title.label
        assert "[@click=app.quit]" in title.plain and "[/red]" in title.plain
        assert not any(span.style and "click" in str(span.style) for span in title.spans)
        call.result = "[/] result with [bold]brackets"
        block.refresh_call()
        await pilot.pause()
        assert "[@click=app.quit]" in block._title.label.plain
        assert app.is_running and errors == []
