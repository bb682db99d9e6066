"""The user's memory from the command line: `newt rename`, `newt delete`,
`newt memory search|show|forget` and `newt --incognito`, run as the real CLI
(a subprocess) on a store whose turns were made by `newt -p` against the fake
server. The memory commands run with no backend configured at all and must
send nothing; what they forget must be gone from every byte of the database."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.forgetting import holds
from tests.support.session_helpers import MODEL, newt_cmd

SECRET = "QUIXOTICPLUM77"
CONTROL = "ZEBRAPAVEMENT31"
CONFIG = '[recall]\nembeddings = "off"\n'


@pytest.fixture
def home(_isolated_home: Path) -> Path:
    (_isolated_home / "config.toml").write_text(CONFIG)
    return _isolated_home


def chat(fake: FakeOpenAI, home: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """One `newt -p` turn against the fake server (its args after the backend's)."""
    result = newt_cmd("--base-url", fake.base_url, "--model", MODEL, *extra, home=home, stdin="")
    assert result.returncode == 0, result.stderr
    return result


def say(fake: FakeOpenAI, home: Path, text: str, *extra: str) -> dict[str, object]:
    """A turn in print mode with --json; its JSON object."""
    data: dict[str, object] = json.loads(chat(fake, home, *extra, "-p", text, "--json").stdout)
    return data


def offline(*args: str, home: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """A memory command with no backend anywhere: no --base-url, no config for one."""
    return newt_cmd(*args, home=home, stdin=stdin)


def db_rows(home: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    con = sqlite3.connect(home / "newt.db")
    try:
        return list(con.execute(sql, params))
    finally:
        con.close()


def two_conversations(fake: FakeOpenAI, home: Path) -> tuple[str, str]:
    """One that holds the secret (and a reply with an escape sequence), one the control."""
    fake.script(Reply(text=f"Got it \x1b]52;c;aGk=\x07\x1b[31mred: {SECRET} is noted."))
    first = say(fake, home, f"My locker code is {SECRET}, please remember it.")
    second = say(fake, home, f"The bike lock is {CONTROL}.")
    return str(first["conversation_id"]), str(second["conversation_id"])


def search_json(home: Path, query: str) -> list[dict[str, object]]:
    result = offline("memory", "search", query, "--json", home=home)
    assert result.returncode == 0, result.stderr
    hits: list[dict[str, object]] = json.loads(result.stdout)
    return hits


# -- rename and delete ---------------------------------------------------------


def test_rename_with_a_unique_prefix(fake_openai: FakeOpenAI, home: Path) -> None:
    conv, _ = two_conversations(fake_openai, home)
    sent = len(fake_openai.chat_requests)
    result = offline("rename", conv[:8], "Locker", "  codes", home=home)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Locker codes\n"
    assert db_rows(home, "SELECT title FROM conversations WHERE id = ?", conv) == [
        ("Locker codes",)
    ]
    listing = offline("list", home=home).stdout
    assert "Locker codes" in listing
    assert len(fake_openai.chat_requests) == sent  # nothing was sent

    empty = offline("rename", conv[:8], "  ", home=home)
    assert empty.returncode == 2 and "empty" in empty.stderr
    unknown = offline("rename", "nosuchid", "x", home=home)
    assert unknown.returncode == 2 and "no conversation with id 'nosuchid'" in unknown.stderr


def test_rename_refuses_an_ambiguous_prefix(home: Path) -> None:
    offline("list", home=home)  # the schema
    con = sqlite3.connect(home / "newt.db")
    for conv_id in ("abc111", "abc222"):
        con.execute(
            "INSERT INTO conversations(id, title, created_at, updated_at) VALUES (?, 't', 1, 1)",
            (conv_id,),
        )
    con.commit()
    con.close()
    result = offline("rename", "abc", "new", home=home)
    assert result.returncode == 2
    assert "2 conversations start with 'abc'" in result.stderr
    assert db_rows(home, "SELECT DISTINCT title FROM conversations") == [("t",)]


def test_delete_without_a_terminal_needs_yes(fake_openai: FakeOpenAI, home: Path) -> None:
    conv, other = two_conversations(fake_openai, home)
    result = offline("delete", conv[:10], home=home)
    assert result.returncode == 2
    assert "--yes" in result.stderr and "nothing was deleted" in result.stderr
    assert "My locker code is" in result.stdout and "2 messages" in result.stdout  # what it was
    assert "\x1b" not in result.stdout
    assert len(db_rows(home, "SELECT id FROM conversations")) == 2
    assert holds(home / "newt.db", SECRET)

    result = offline("delete", conv[:10], "--yes", home=home)
    assert result.returncode == 0, result.stderr
    assert "forgot 1 conversation, 2 messages, 2 memory records" in result.stdout
    assert db_rows(home, "SELECT id FROM conversations") == [(other,)]
    assert holds(home / "newt.db", SECRET) == []
    assert holds(home / "newt.db", CONTROL)
    again = offline("delete", conv[:10], "--yes", home=home)
    assert again.returncode == 2 and "no conversation with id" in again.stderr


def run_on_a_terminal(*args: str, home: Path, answer: str) -> subprocess.CompletedProcess[str]:
    """`newt ARGS` with a pseudo-terminal as stdin, `answer` typed ahead."""
    import pty

    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "NEWT_CONFIG")}
    env["NEWT_HOME"] = str(home)
    try:
        os.write(master, answer.encode())
        proc = subprocess.run(
            [sys.executable, "-m", "newt", *args],
            stdin=slave,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    finally:
        os.close(slave)
        os.close(master)
    return proc


def test_delete_asks_once_on_a_terminal(fake_openai: FakeOpenAI, home: Path) -> None:
    conv, _ = two_conversations(fake_openai, home)
    declined = run_on_a_terminal("delete", conv[:10], home=home, answer="n\n")
    assert declined.returncode == 1
    assert "Delete this conversation" in declined.stderr and "[y/N]" in declined.stderr
    assert "nothing was deleted" in declined.stderr
    assert len(db_rows(home, "SELECT id FROM conversations")) == 2

    accepted = run_on_a_terminal("delete", conv[:10], home=home, answer="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stderr.count("[y/N]") == 1
    assert "forgot 1 conversation" in accepted.stdout
    assert len(db_rows(home, "SELECT id FROM conversations")) == 1


# -- memory search and show ----------------------------------------------------


def test_memory_search_lists_hits_and_json_has_them_whole(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    two_conversations(fake_openai, home)
    sent = len(fake_openai.chat_requests)
    result = offline("memory", "search", SECRET, home=home)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["KEY", "KIND", "SAID", "CONVERSATION", "EXCERPT"]
    rows = [line for line in lines[1:] if SECRET in line]
    assert {line.split()[1] for line in rows} == {"message", "reply"}
    assert all("My locker code is" in line for line in rows)  # the conversation's title
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "red: " + SECRET in result.stdout  # the text around the escapes stays
    assert CONTROL not in result.stdout

    hits = search_json(home, SECRET)
    by_kind = {h["kind"]: h for h in hits}
    escaped = f"Got it \x1b]52;c;aGk=\x07\x1b[31mred: {SECRET} is noted."
    assert by_kind["reply"]["content"] == escaped
    assert by_kind["message"]["content"] == f"My locker code is {SECRET}, please remember it."
    assert str(by_kind["message"]["key"]).startswith("t")
    raw = offline("memory", "search", SECRET, "--json", home=home).stdout
    assert "\x1b" not in raw  # JSON-escaped, not raw
    assert len(search_json(home, "")) == 4  # no query: the newest records
    limited = offline("memory", "search", SECRET, "--json", "--limit", "1", home=home)
    assert len(json.loads(limited.stdout)) == 1
    nothing = offline("memory", "search", "nonexistentword", home=home)
    assert nothing.stdout == "nothing in memory matches 'nonexistentword'\n"
    assert len(fake_openai.chat_requests) == sent  # searching sent nothing


def test_memory_show_prints_one_record_whole(fake_openai: FakeOpenAI, home: Path) -> None:
    two_conversations(fake_openai, home)
    long = "The plan, step by step: " + " ".join(f"step{i} {CONTROL}" for i in range(40))
    say(fake_openai, home, long)
    key = next(h["key"] for h in search_json(home, "step39") if h["kind"] == "message")
    result = offline("memory", "show", str(key), home=home)
    assert result.returncode == 0, result.stderr
    assert f"key:          {key}" in result.stdout and "kind:         message" in result.stdout
    assert result.stdout.rstrip().endswith(long)  # whole, not an excerpt

    reply = next(h["key"] for h in search_json(home, SECRET) if h["kind"] == "reply")
    shown = offline("memory", "show", str(reply), home=home)
    assert f"red: {SECRET} is noted." in shown.stdout and "\x1b" not in shown.stdout
    missing = offline("memory", "show", "t9999", home=home)
    assert missing.returncode == 2 and "no memory record 't9999'" in missing.stderr
    bad = offline("memory", "show", "hello", home=home)
    assert bad.returncode == 2 and "not a record key" in bad.stderr


# -- forgetting ------------------------------------------------------------------


def test_forget_matching_previews_asks_and_leaves_no_byte(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    two_conversations(fake_openai, home)
    db = home / "newt.db"
    assert holds(db, SECRET), "the secret never reached the file: the test proves nothing"

    refused = offline("memory", "forget", "--matching", SECRET, home=home)
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert f"2 memory records hold '{SECRET}'; they would be forgotten:" in refused.stdout
    heads = [b.splitlines()[0] for b in refused.stdout.split("\n\n")[1:]]
    assert sorted(h.split()[1] for h in heads) == ["message", "reply"]
    assert f"  | My locker code is {SECRET}, please remember it." in refused.stdout  # whole
    assert "\x1b" not in refused.stdout
    assert len(search_json(home, SECRET)) == 2  # nothing went

    done = offline("memory", "forget", "--matching", SECRET, "--yes", home=home)
    assert done.returncode == 0, done.stderr
    assert "forgot 2 messages, 2 memory records" in done.stdout
    assert search_json(home, SECRET) == []
    listed = offline("memory", "search", SECRET, home=home)
    assert listed.stdout == f"nothing in memory matches '{SECRET}'\n"  # no hit, no table
    assert holds(db, SECRET) == []
    assert holds(db, CONTROL), "what was not forgotten must stay"
    again = offline("memory", "forget", "--matching", SECRET, home=home)
    assert again.returncode == 0 and "nothing to forget" in again.stdout


def test_forget_matching_says_what_goes_and_can_keep_the_rest(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """A message holding more than the match is shown whole and the
    preview says so; --sentences forgets only the part holding it (the rest
    stays, the cut marked, not a byte of the part left); the conversation
    titled from its first message is titled from what remains."""
    fact = "I'm allergic to peanuts"
    fake_openai.script(Reply(text="Noted."))
    first = say(fake_openai, home, f"My sister lives in Tromsø, {fact}, my dog is called Pixel")
    fake_openai.script(Reply(text="Peanuts are legumes."))
    say(fake_openai, home, "Tell me about peanuts", "-c")
    conv = str(first["conversation_id"])

    one = offline("memory", "forget", "--matching", "sister lives", home=home)
    assert "1 memory record holds 'sister lives'; it would be forgotten:" in one.stdout

    preview = offline("memory", "forget", "--matching", "peanuts", home=home)
    assert preview.returncode == 2
    assert "3 memory records hold 'peanuts'; they would be forgotten:" in preview.stdout
    assert f"  | My sister lives in Tromsø, {fact}, my dog is called Pixel" in preview.stdout
    assert "it holds more than 'peanuts': all of it goes (--sentences keeps the rest)" in (
        preview.stdout
    )
    keep = offline("memory", "forget", "--matching", "peanuts", "--sentences", home=home)
    assert "only the sentences holding it go" in keep.stdout
    assert "  | My sister lives in Tromsø, [forgotten], my dog is called Pixel" in keep.stdout

    done = offline("memory", "forget", "--matching", "peanuts", "--sentences", "--yes", home=home)
    assert done.returncode == 0, done.stderr
    assert "1 message kept what did not hold the words" in done.stdout
    assert holds(home / "newt.db", "peanuts") == []  # nor the reply, nor the question
    assert holds(home / "newt.db", "allergic") == []  # the whole clause went
    assert holds(home / "newt.db", "Pixel") and holds(home / "newt.db", "Tromsø")
    [kept] = db_rows(home, "SELECT user FROM turns WHERE conversation_id = ? ORDER BY id", conv)[:1]
    assert kept == ("My sister lives in Tromsø, [forgotten], my dog is called Pixel",)
    [(title,)] = db_rows(home, "SELECT title FROM conversations WHERE id = ?", conv)
    assert title.startswith("My sister lives in Tromsø, [forgotten]")
    hits = search_json(home, "Pixel")
    assert [h["key"] for h in hits] and all("peanuts" not in str(h["content"]) for h in hits)


def test_a_title_made_from_a_forgotten_message_comes_from_what_remains(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    first = say(fake_openai, home, f"My locker code is {SECRET}.")
    say(fake_openai, home, "What is a good bike lock?", "-c")
    done = offline("memory", "forget", "--matching", SECRET, "--yes", home=home)
    assert done.returncode == 0, done.stderr
    conv = str(first["conversation_id"])
    assert db_rows(home, "SELECT title FROM conversations WHERE id = ?", conv) == [
        ("What is a good bike lock?",)
    ]
    alone = say(fake_openai, home, f"Only {CONTROL} here.")
    offline("memory", "forget", "--matching", CONTROL, "--yes", home=home)
    rows = db_rows(home, "SELECT title FROM conversations WHERE id = ?", alone["conversation_id"])
    assert rows == [("(forgotten)",)]  # nothing remains to title it from


def test_forget_matching_asks_on_a_terminal(fake_openai: FakeOpenAI, home: Path) -> None:
    two_conversations(fake_openai, home)
    declined = run_on_a_terminal("memory", "forget", "--matching", SECRET, home=home, answer="\n")
    assert declined.returncode == 1 and "Forget these 2?" in declined.stderr
    assert len(search_json(home, SECRET)) == 2
    accepted = run_on_a_terminal("memory", "forget", "--matching", SECRET, home=home, answer="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert search_json(home, SECRET) == [] and holds(home / "newt.db", SECRET) == []


def test_forget_by_key(fake_openai: FakeOpenAI, home: Path) -> None:
    two_conversations(fake_openai, home)
    message = next(h["key"] for h in search_json(home, SECRET) if h["kind"] == "message")
    unknown = offline("memory", "forget", str(message), "t9999", home=home)
    assert unknown.returncode == 2 and "'t9999'" in unknown.stderr
    assert len(search_json(home, SECRET)) == 2  # nothing went

    done = offline("memory", "forget", str(message), home=home)  # named keys: no question
    assert done.returncode == 0, done.stderr
    assert "forgot 1 message, 1 memory record" in done.stdout
    assert [h["kind"] for h in search_json(home, SECRET)] == ["reply"]
    assert "My locker code" not in "".join(map(str, db_rows(home, "SELECT user FROM turns")))

    neither = offline("memory", "forget", home=home)
    assert neither.returncode == 2 and "--matching" in neither.stderr
    both = offline("memory", "forget", "--all", "--matching", "x", home=home)
    assert both.returncode == 2


def test_every_count_of_a_conversation_says_the_same_and_skips_the_forgotten(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """`newt list`, `newt delete`'s question and its report count a conversation's
    messages alike (the user's and the replies); a forgotten one is not a message
    any more. They used to say 6, 3 and 3 of one conversation."""
    conv, _ = two_conversations(fake_openai, home)
    fake_openai.script(Reply(text="Noted, the gym is on Tuesdays."))
    chat(fake_openai, home, "-r", conv[:10], "-p", "I go to the gym on Tuesdays.")
    sizes = {r.split()[0]: r.split()[3] for r in offline("list", home=home).stdout.splitlines()[1:]}
    assert sizes[conv[:12]] == "4"

    message = next(h["key"] for h in search_json(home, SECRET) if h["kind"] == "message")
    assert offline("memory", "forget", str(message), home=home).returncode == 0
    sizes = {r.split()[0]: r.split()[3] for r in offline("list", home=home).stdout.splitlines()[1:]}
    assert sizes[conv[:12]] == "3"
    asked = offline("delete", conv[:10], home=home)
    assert "3 messages" in asked.stdout, asked.stdout
    done = offline("delete", conv[:10], "--yes", home=home)
    assert "forgot 1 conversation, 3 messages," in done.stdout


def test_forget_all(fake_openai: FakeOpenAI, home: Path) -> None:
    two_conversations(fake_openai, home)
    refused = offline("memory", "forget", "--all", home=home)
    assert refused.returncode == 2 and "nothing was forgotten" in refused.stderr
    assert "every conversation (2)" in refused.stdout
    assert "every memory record (4)" in refused.stdout
    assert len(db_rows(home, "SELECT id FROM conversations")) == 2

    done = offline("memory", "forget", "--all", "--yes", home=home)
    assert done.returncode == 0, done.stderr
    assert "forgot 2 conversations, 4 messages, 4 memory records" in done.stdout
    assert offline("list", home=home).stdout == "no conversations yet\n"
    assert search_json(home, "") == []
    db = home / "newt.db"
    assert holds(db, SECRET) == [] and holds(db, CONTROL) == []


def test_memory_commands_work_with_no_database_and_no_backend(home: Path) -> None:
    result = offline("memory", "search", "anything", home=home)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "nothing in memory matches 'anything'\n"
    newest = offline("memory", "search", home=home)
    assert newest.returncode == 0 and newest.stdout == "memory is empty\n"


# -- incognito -------------------------------------------------------------------


def anywhere_in(home: Path, text: str) -> list[str]:
    """Every file under NEWT_HOME (the database, its -wal and -shm, logs,
    rescued replies, lock and pid files) that holds `text` in any case."""
    needle = text.lower().encode()
    return [
        str(path.relative_to(home))
        for path in sorted(home.rglob("*"))
        if path.is_file() and needle in path.read_bytes().lower()
    ]


def test_incognito_print_mode_leaves_nothing_on_disk(fake_openai: FakeOpenAI, home: Path) -> None:
    """`newt --incognito -p` writes nothing of the conversation,
    not its title in `newt list`, not a byte of any file under NEWT_HOME;
    the request still goes to the server."""
    say(fake_openai, home, f"Remember {CONTROL}.")  # the database exists and is in use
    kept = say(fake_openai, home, f"My secret codeword is {SECRET}. Just reply OK.", "--incognito")
    assert kept["incognito"] is True and SECRET in kept["reply"]
    assert SECRET in json.dumps(fake_openai.chat_requests[-1].body["messages"])
    assert "save_note" not in json.dumps(fake_openai.chat_requests[-1].body.get("tools", []))
    assert anywhere_in(home, SECRET) == []
    assert anywhere_in(home, CONTROL), "what was said outside incognito is kept"
    assert db_rows(home, "SELECT count(*) FROM conversations") == [(1,)]
    listed = offline("list", home=home)
    assert SECRET not in listed.stdout and "Remember" in listed.stdout
    conv = str(kept["conversation_id"])
    backend = ("--base-url", fake_openai.base_url, "--model", MODEL)
    gone = newt_cmd(*backend, "-r", conv[:8], "-p", "more", home=home, stdin="")
    assert gone.returncode == 2 and "no conversation" in gone.stderr.lower()

    # plain text mode too (no --json)
    plain = chat(fake_openai, home, "--incognito", "-p", f"again {SECRET}")
    assert plain.stdout.startswith("ok: again") and anywhere_in(home, SECRET) == []


def test_incognito_on_a_resumed_conversation_deletes_what_was_stored(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """-c --incognito: the conversation goes on in memory; what was stored of it
    is deleted as `newt delete` deletes (no byte left), and stderr says so."""
    say(fake_openai, home, f"Remember {CONTROL}.")
    first = say(fake_openai, home, f"My locker code is {SECRET}.")
    assert len(search_json(home, SECRET)) == 2 and anywhere_in(home, SECRET)
    result = chat(fake_openai, home, "--incognito", "-c", "-p", "and one more thing")
    assert "newt: incognito: nothing of this conversation is saved" in result.stderr
    assert "forgot 1 conversation, 2 messages, 2 memory records" in result.stderr
    assert SECRET in json.dumps(fake_openai.chat_requests[-1].body["messages"])  # it goes on
    conv = str(first["conversation_id"])
    assert db_rows(home, "SELECT count(*) FROM conversations WHERE id = ?", conv) == [(0,)]
    assert anywhere_in(home, SECRET) == [] and anywhere_in(home, "one more thing") == []
    assert anywhere_in(home, CONTROL)


def test_a_preset_with_incognito(fake_openai: FakeOpenAI, home: Path) -> None:
    (home / "config.toml").write_text(
        CONFIG + "[presets.private]\nincognito = true\ntemperature = 0.3\n[presets.open]\n"
        "temperature = 0.5\n"
    )
    kept = say(fake_openai, home, f"Between us: {SECRET}.", "--preset", "private")
    assert kept["incognito"] is True
    assert fake_openai.chat_requests[-1].body["temperature"] == 0.3
    assert db_rows(home, "SELECT count(*) FROM memory_records") == [(0,)]
    assert anywhere_in(home, SECRET) == []
    plain = say(fake_openai, home, f"Remember {CONTROL}.", "--preset", "open")
    assert plain["incognito"] is False and len(search_json(home, CONTROL)) == 2

    (home / "config.toml").write_text(CONFIG + '[presets.private]\nincognito = "yes"\n')
    broken = newt_cmd("list", home=home)
    assert broken.returncode == 2
    assert "presets.private.incognito" in broken.stderr and "true or false" in broken.stderr


def test_incognito_is_for_a_chat(home: Path) -> None:
    result = offline("--incognito", "list", home=home)
    assert result.returncode == 2 and "--incognito is for a chat" in result.stderr


def test_incognito_is_handed_to_the_tui(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`newt --incognito -c` runs the one TUI with incognito among its startup
    choices (the app carries it out: the test below)."""
    import newt.ui.app
    from newt.cli.main import main
    from newt.ui.open_request import OpenRequest

    handed: list[object] = []
    monkeypatch.setattr(newt.ui.app, "run_tui", lambda config, **kw: handed.append(kw) or 0)
    assert main(["--base-url", "http://127.0.0.1:9/v1", "--model", MODEL, "--incognito", "-c"]) == 0
    assert handed == [{"opening": OpenRequest(continue_latest=True, incognito=True), "local": None}]
    assert main(["--base-url", "http://127.0.0.1:9/v1", "--model", MODEL]) == 0
    assert handed[-1] == {"opening": OpenRequest(), "local": None}


async def test_incognito_in_the_tui(fake_openai: FakeOpenAI, home: Path) -> None:
    """`newt --incognito -c` in the TUI: the resumed conversation leaves memory
    before the first turn, and the new turn is never indexed."""
    from newt.config import load_config
    from newt.ui.app import NewtApp
    from newt.ui.open_request import OpenRequest
    from tests.support.pilot import chat_ready, type_and_send, wait_idle

    first = say(fake_openai, home, f"My locker code is {SECRET}.")
    assert len(search_json(home, SECRET)) == 2
    config = load_config(base_url=fake_openai.base_url, model=MODEL)
    app = NewtApp(config, opening=OpenRequest(continue_latest=True, incognito=True))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await chat_ready(pilot)
        assert app.session is not None and app.session.incognito
        assert "incognito: nothing saved" in screen.sub_title
        said = " ".join(n.message for n in app._notifications)
        assert "Nothing of this conversation is saved" in said
        assert "forgot 1 conversation, 2 messages, 2 memory records" in said
        assert anywhere_in(home, SECRET) == []  # gone before the first turn
        await type_and_send(pilot, f"and {CONTROL} too")
        await wait_idle(pilot, screen)
        assert anywhere_in(home, CONTROL) == []  # while the app runs too
        await pilot.press("ctrl+q")
    conv = str(first["conversation_id"])
    assert db_rows(home, "SELECT count(*) FROM conversations WHERE id = ?", conv) == [(0,)]
    sent = json.dumps(fake_openai.chat_requests[-1].body["messages"])
    assert CONTROL in sent and SECRET in sent  # the conversation went on, in memory
    assert anywhere_in(home, SECRET) == [] and anywhere_in(home, CONTROL) == []


async def test_applying_an_incognito_preset_turns_incognito_on(
    fake_openai: FakeOpenAI, home: Path
) -> None:
    """`/preset NAME` (and the TUI's `--preset`) go through apply_preset: an
    incognito preset turns it on for the open conversation and takes its
    records out; a preset without it never turns it off."""
    from newt.agent.session.chat_session import ChatSession
    from tests.support.session_helpers import make_config, run_turn

    text = CONFIG + "[presets.private]\nincognito = true\n[presets.open]\ntemperature = 0.5\n"
    session = await ChatSession.open(make_config(fake_openai.base_url, text))
    try:
        await run_turn(session, f"My locker code is {SECRET}.")
        assert not session.incognito and await session.memory_records.search(SECRET)
        await session.apply_preset("private")
        assert session.incognito
        assert await session.memory_records.search(SECRET) == []
        await session.apply_preset("open")
        assert session.incognito  # only turned on, never off
        await session.conversations.new_conversation()
        assert session.incognito  # and the next conversation starts out of memory too
    finally:
        await session.close()
