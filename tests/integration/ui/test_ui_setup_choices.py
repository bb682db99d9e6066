"""The first-run screen offers models found here first, then the catalogue with the
recommendation, then SmolLM2; a found model is chosen with Enter, and a failed
download stays on the screen with the way out (SmolLM2 works offline)."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.widgets import Button, Static

from newt.agent.local.catalogue import LocalChoice
from newt.local.setup import Plan, SetupError
from newt.ui.screens.setup import LocalModel, SetupScreen

FOUND = LocalChoice("llama3.2:3b", "2.0 GB, found in Ollama", path=Path("/models/blob"))
BEST = LocalChoice("Qwen3 4B (recommended here)", "download 2.5 GB", None, "qwen3-4b", True)


class Host(App[None]):
    def __init__(self, screen: SetupScreen) -> None:
        super().__init__()
        self.setup, self.result = screen, None

    def on_mount(self) -> None:
        self.push_screen(self.setup, lambda r: setattr(self, "result", r))


def screen(tmp_path: Path, choices: list[LocalChoice], prepare) -> SetupScreen:  # type: ignore[no-untyped-def]
    return SetupScreen(
        tmp_path / "config.toml",
        local_plan=Plan(build_binary=False, fetch_model=False),
        choices=choices,
        prepare_choice=prepare,
    )


async def test_found_models_come_first_and_enter_runs_one(tmp_path: Path) -> None:
    asked: list[LocalChoice] = []

    def prepare(choice: LocalChoice, progress):  # type: ignore[no-untyped-def]
        asked.append(choice)
        return Path("/bin/llama-server"), choice.path or Path("/dl.gguf")

    app = Host(screen(tmp_path, [FOUND, BEST], prepare))
    async with app.run_test(size=(100, 50)) as pilot:
        await pilot.pause()
        found, best = (
            app.setup.query_one("#setup-choice-0", Button),
            app.setup.query_one("#setup-choice-1", Button),
        )
        smol = app.setup.query_one("#setup-local", Button)
        assert found.region.y < best.region.y < smol.region.y
        assert "recommended here" in str(best.label)
        # one line each, and that line is the name (Button's tall borders had hidden it)
        assert found.content_region.height == 1 and best.content_region.height == 1
        assert app.focused is found
        await pilot.press("enter")
        for _ in range(100):
            await pilot.pause(0.02)
            if app.result is not None:
                break
    assert asked == [FOUND]
    # what the config keeps so later runs start it again: a found model by its file
    blob = Path("/models/blob")
    assert app.result == LocalModel(Path("/bin/llama-server"), blob, str(blob), "llama3.2:3b")
    assert BEST.remembered == ("qwen3-4b", "Qwen3 4B")  # a catalogue model by name


async def test_with_nothing_found_smollm2_has_the_focus_and_a_failed_download_says_why(
    tmp_path: Path,
) -> None:
    def offline(choice: LocalChoice, progress):  # type: ignore[no-untyped-def]
        raise SetupError("Could not reach https://huggingface.co. SmolLM2 below works offline")

    app = Host(screen(tmp_path, [BEST], offline))
    async with app.run_test(size=(100, 50)) as pilot:
        await pilot.pause()
        assert app.focused is app.setup.query_one("#setup-local", Button)
        assert "newt --local --list" in str(app.setup.query(".setup-about").first().render())
        await pilot.click("#setup-choice-0")
        error = app.setup.query_one("#setup-error", Static)
        for _ in range(100):
            await pilot.pause(0.02)
            if str(error.render()):
                break
        assert "works offline" in str(error.render())
        smol = app.setup.query_one("#setup-local", Button)
        assert not smol.disabled and app.focused is smol  # Enter now ends in a chat
        assert app.result is None


async def test_at_100x30_the_buttons_are_in_view_and_the_highlighted_choice_says_what_runs(
    tmp_path: Path,
) -> None:
    """Every choice is one line saying what it runs; the details under the list are
    the highlighted one's; the form's Save and Quit stay in view below what scrolls."""
    many = [LocalChoice(f"Model {i}", f"download {i} GB", None, f"m{i}") for i in range(6)]
    app = Host(screen(tmp_path, [FOUND, BEST, *many], lambda c, p: None))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        setup = app.setup
        for button in ("#setup-save", "#setup-quit"):
            region = setup.query_one(button, Button).region
            assert region.height and region.bottom <= 30, button
        found = setup.query_one("#setup-choice-0", Button)
        assert app.focused is found and str(found.label) == "Run llama3.2:3b"
        detail = setup.query_one("#setup-choice-detail", Static)
        assert str(detail.render()) == FOUND.detail
        await pilot.press("tab")
        assert app.focused is setup.query_one("#setup-choice-1", Button)
        assert str(detail.render()) == BEST.detail
        smol = setup.query_one("#setup-local", Button)
        smol.focus()
        await pilot.pause()
        assert "SmolLM2" in str(smol.label) and "SmolLM2" in str(detail.render())
        body = setup.query_one("#setup-body")
        assert body.max_scroll_y > 0 and body.show_vertical_scrollbar  # it scrolls, visibly
