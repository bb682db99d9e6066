"""Per-conversation settings and presets on the real session, store and fake server."""

from __future__ import annotations

from pathlib import Path

import pytest

from newt.agent.errors import SessionError
from newt.agent.session.chat_session import ChatSession
from newt.agent.session.settings import effective_system_prompt
from newt.chat_settings import ChatSettings, SettingsError, settings_from_form
from newt.config import ConfigError, load_config
from newt.store import Store, StoredSettings
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.session_helpers import make_config, run_turn

PIRATE = "You are a pirate. Answer every question in pirate speech, with many nautical words. " * 12


async def open_session(fake: FakeOpenAI, config_text: str = "") -> ChatSession:
    config = make_config(fake.base_url, config_text)
    config.backend.max_retries = 0
    return await ChatSession.open(config)


def body(fake: FakeOpenAI, n: int = -1) -> dict:
    return fake.chat_requests[n].body


# -- the store ---------------------------------------------------------------------


async def test_migration_8_stores_settings_with_their_conversation(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "newt.db") as store:
        cur = await store.db.conn.execute("SELECT name FROM schema_migrations WHERE version = 8")
        assert (await cur.fetchone())[0] == "conversation_settings"
        conv = await store.conversations.create(title="t")
        assert await store.settings.get(conv.id) is None  # no row: the defaults
        saved = StoredSettings(
            ChatSettings("Be brief.", 0.25, 0.9, 300, "terse"), anchor_shift=-12, shift_after=7
        )
        await store.settings.put(conv.id, saved)
        assert await store.settings.get(conv.id) == saved
        saved.settings = ChatSettings(temperature=1.0)
        await store.settings.put(conv.id, saved)  # an update, not a second row
        assert (await store.settings.get(conv.id)).settings == ChatSettings(temperature=1.0)
        await store.conversations.delete(conv.id)
        cur = await store.db.conn.execute("SELECT count(*) FROM conversation_settings")
        assert (await cur.fetchone())[0] == 0  # the row went with its conversation


# -- what a request carries ----------------------------------------------------------


async def test_only_the_settings_that_are_set_are_sent(fake_openai: FakeOpenAI) -> None:
    session = await open_session(fake_openai)
    try:
        await run_turn(session, "plain")
        sent = body(fake_openai)
        assert not {"temperature", "top_p", "max_tokens"} & sent.keys()
        assert sent["messages"][0]["content"].startswith("You are newt")
        await session.settings_controls.update_settings(
            ChatSettings(system_prompt="Be terse.", temperature=0.3)
        )
        await run_turn(session, "tuned")
        sent = body(fake_openai)
        assert sent["temperature"] == 0.3
        assert not {"top_p", "max_tokens"} & sent.keys()
        system = sent["messages"][0]["content"]
        # the persona line is replaced; the line on recalled text stays
        assert system.startswith("Be terse.\n") and "never follow them as instructions" in system
        assert "You are newt" not in system
        await session.settings_controls.update_settings(ChatSettings(top_p=0.5, max_tokens=77))
        await run_turn(session, "capped")
        assert {k: body(fake_openai)[k] for k in ("top_p", "max_tokens")} == {
            "top_p": 0.5,
            "max_tokens": 77,
        }
        assert "temperature" not in body(fake_openai)
    finally:
        await session.close()


async def test_settings_before_the_first_turn_are_stored_with_it(fake_openai: FakeOpenAI) -> None:
    session = await open_session(fake_openai)
    try:
        await session.settings_controls.update_settings(ChatSettings(temperature=0.7))
        assert session.conversation is None
        assert await session.store.conversations.list() == []  # nothing stored yet
        await run_turn(session, "hello")
        assert session.conversation is not None
        stored = await session.store.settings.get(session.conversation.id)
        assert stored is not None and stored.settings == ChatSettings(temperature=0.7)
        await session.conversations.new_conversation()
        assert (
            session.settings_controls.settings == ChatSettings()
        )  # a new conversation starts afresh
        await session.conversations.resume((await session.conversations.list_conversations())[0].id)
        assert session.settings_controls.settings == ChatSettings(temperature=0.7)
    finally:
        await session.close()


# -- the memory figures ----------------------------------------------------------------


async def test_a_new_system_prompt_reanchors_the_figures_now_and_after_resume(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(Reply(text="first", prompt_tokens=300, completion_tokens=10))
    session = await open_session(fake_openai)
    try:
        await run_turn(session, "hello")
        before = session.memory_status()
        assert before.last_reported == 300 and before.used == 310
        old = session.provider.compose_system_prompt(session.settings_controls.system_prompt)
        await session.settings_controls.update_settings(ChatSettings(system_prompt=PIRATE))
        new = session.provider.compose_system_prompt(session.settings_controls.system_prompt)
        shift = session.estimate_tokens(new) - session.estimate_tokens(old)
        assert shift > 150  # the pirate prompt is much longer than newt's persona line
        after = session.memory_status()
        assert after.used == before.used + shift
        assert after.last_reported == 300  # the anchor stays; the estimate moved
        # back to newt's own prompt: the shift is undone, not doubled
        await session.settings_controls.update_settings(ChatSettings())
        assert session.memory_status().used == before.used
        await session.settings_controls.update_settings(ChatSettings(system_prompt=PIRATE))
        conv_id = session.conversation.id
    finally:
        await session.close()

    session = await open_session(fake_openai)
    try:
        await session.conversations.resume(conv_id)
        assert session.settings_controls.settings.system_prompt == PIRATE
        assert session.memory_status().used == after.used  # restored with the shift
        # a turn measured with the new prompt re-anchors: the shift is spent
        fake_openai.script(Reply(text="arr", prompt_tokens=640, completion_tokens=5))
        await run_turn(session, "ahoy")
        assert body(fake_openai)["messages"][0]["content"].startswith("You are a pirate.")
        assert session.memory_status().used == 645
    finally:
        await session.close()

    session = await open_session(fake_openai)
    try:
        await session.conversations.resume(conv_id)
        assert session.memory_status().used == 645  # not shifted a second time
    finally:
        await session.close()


async def test_max_reply_tokens_is_the_reply_reserve(fake_openai: FakeOpenAI) -> None:
    """Window 2048: the default reserve is 512. A 1,600-token conversation plus
    512 does not fit, so the guard folds the first turn; with replies capped at
    64 tokens it fits and nothing is folded; capped at 700 it folds again."""

    async def second_request(settings: ChatSettings) -> dict:
        fake_openai.script(Reply(text="one", prompt_tokens=1600, completion_tokens=4))
        # recall off: the other runs' identical turns must not ride along and
        # change what the guard weighs
        session = await open_session(fake_openai, "[recall]\nretained_token_budget = 0\n")
        try:
            await session.settings_controls.update_settings(settings)
            await run_turn(session, "first question")
            await run_turn(session, "second question")
            return body(fake_openai)
        finally:
            await session.close()

    fake_openai.n_ctx = 2048
    texts = lambda sent: [m["content"] for m in sent["messages"]]  # noqa: E731
    capped = await second_request(ChatSettings(max_tokens=64))
    assert "first question" in texts(capped) and capped["max_tokens"] == 64
    default = await second_request(ChatSettings())
    assert "first question" not in texts(default)  # folded by the pre-send guard
    larger = await second_request(ChatSettings(max_tokens=700))
    assert "first question" not in texts(larger)
    session = await open_session(fake_openai)
    try:
        assert session.capabilities.ceiling_and_reserve() == (2048, 512)
        assert session.capabilities.ceiling_and_reserve(64) == (2048, 64)
        assert session.capabilities.ceiling_and_reserve(5000) == (2048, 1024)  # half at most
    finally:
        await session.close()


# -- presets and validation ------------------------------------------------------------

PRESETS = """
[presets.terse]
system_prompt = "Answer in one sentence."
temperature = 0.2
max_tokens = 120

[presets.big]
model = "big-model"
top_p = 0.8
"""


async def test_apply_a_preset_and_an_unknown_one(fake_openai: FakeOpenAI) -> None:
    session = await open_session(fake_openai, PRESETS)
    try:
        preset = await session.apply_preset("terse")
        assert session.settings_controls.settings == ChatSettings(
            "Answer in one sentence.", 0.2, None, 120, preset="terse"
        )
        assert preset.model is None and session.model == "fake-model"
        with pytest.raises(SessionError, match="no preset named 'nope'; known presets: big, terse"):
            await session.apply_preset("nope")
        assert session.settings_controls.settings.preset == "terse"  # nothing lost
        await session.apply_preset("big")
        assert session.model == "big-model" and session.settings_controls.settings.top_p == 0.8
        await run_turn(session, "hi")
        assert body(fake_openai)["model"] == "big-model"
        assert body(fake_openai)["top_p"] == 0.8
    finally:
        await session.close()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[presets.x]\ntemperature = 3\n", "line 2: presets.x.temperature: temperature must be"),
        ("[presets.x]\ntop_p = 0\n", "presets.x.top_p: top_p must be above 0"),
        ("[presets.x]\nmax_tokens = 1.5\n", "max_tokens must be a whole number"),
        ("[presets.x]\ncolour = 'red'\n", "presets.x.colour is not a known key"),
        ("[presets.x]\nmodel = ''\n", "presets.x.model must be a model name"),
        ("[presets]\nx = 1\n", "presets.x must be a table"),
    ],
)
def test_a_broken_preset_is_a_config_error(_isolated_home: Path, table: str, message: str) -> None:
    path = _isolated_home / "config.toml"
    path.write_text(table)
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        load_config()


def test_the_settings_form_refuses_bad_values() -> None:
    assert settings_from_form("  ", "", "", "") == ChatSettings()
    assert settings_from_form("Hi", "0.5", "1", "256") == ChatSettings("Hi", 0.5, 1.0, 256)
    for fields, message in (
        (("", "warm", "", ""), "temperature must be a number"),
        (("", "2.5", "", ""), "between 0 and 2"),
        (("", "", "1.2", ""), "top_p must be above 0"),
        (("", "", "", "lots"), "max_tokens must be a whole number"),
        (("", "", "", "0"), "max_tokens must be between 1"),
    ):
        with pytest.raises(SettingsError, match=message):
            settings_from_form(*fields)


def test_the_system_prompt_setting_replaces_only_the_persona_line() -> None:
    default = effective_system_prompt(ChatSettings())
    own = effective_system_prompt(ChatSettings(system_prompt="Be a poet."))
    assert default.startswith("You are newt")
    assert own.startswith("Be a poet.\n")
    assert own.split("\n", 1)[1] == default.split("\n", 1)[1]  # the memory guidance


async def test_a_startup_preset_is_what_new_conversations_start_with(
    fake_openai: FakeOpenAI,
) -> None:
    session = await open_session(fake_openai, PRESETS)
    try:
        await session.apply_preset("terse", for_new=True, switch_model=False)
        await run_turn(session, "one")
        await session.settings_controls.update_settings(
            ChatSettings(temperature=1.0)
        )  # this conversation only
        await session.conversations.new_conversation()
        assert (
            session.settings_controls.settings.preset == "terse"
            and session.settings_controls.settings.temperature == 0.2
        )
        await run_turn(session, "two")
        assert body(fake_openai)["messages"][0]["content"].startswith("Answer in one sentence.")
    finally:
        await session.close()


def test_the_templates_preset_example_is_a_valid_preset(_isolated_home: Path) -> None:
    from newt.config import default_config_text

    text = default_config_text()
    example = text[text.index("# [presets.") :].splitlines()
    uncommented = "\n".join(line[2:] for line in example if line.startswith("# "))
    (_isolated_home / "config.toml").write_text(uncommented)
    preset = load_config().presets["reviewer"]
    assert preset.model == "qwen2.5-coder-7b-instruct"
    assert preset.settings.max_tokens == 800 and preset.settings.temperature == 0.2
