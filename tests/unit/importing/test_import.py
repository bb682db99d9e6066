"""`newt import` of the JSON formats (ChatGPT, Claude, newt's own) into a real store.

The ChatGPT and Claude fixtures (tests/fixtures/import/*_conversations.json) are built
by hand from the shapes those exports document: ChatGPT's `mapping` tree with
`current_node` and an image part, Claude's `chat_messages` with an attachment; each
file also holds one broken conversation, which must be refused alone."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.agent.session.export import export_conversation
from newt.cli.import_command import import_main, run_import
from newt.importing import ImportFormatError, import_conversations, read_source
from newt.store import Store
from tests.support.fake_openai import FakeOpenAI, Reply
from tests.support.importing import FIXTURES, counts
from tests.support.session_helpers import make_config, run_turn


async def run(store: Store, path: Path, source: str | None = None):  # type: ignore[no-untyped-def]
    _, items = read_source(path, source)
    return await import_conversations(store, list(items))


async def said_at(store: Store, key: str) -> float:
    record = await store.records.get(key)
    assert record is not None, key
    return record.said_at


async def test_chatgpt_export_keeps_the_branch_last_seen_and_notes_the_image(
    tmp_path: Path,
) -> None:
    async with await Store.open(tmp_path / "n.db") as store:
        summary = await run(store, FIXTURES / "chatgpt_conversations.json")
        assert len(summary.imported) == 1 and summary.refused[0][0] == "cg-2"
        # the other branch is a fork of it (tests/unit/importing/test_import_forks.py)
        (conv,) = [c for c in await store.conversations.list() if c.parent_id is None]
        assert (conv.title, conv.created_at, conv.updated_at) == (
            "Paris trip",
            1700000000.0,
            1700000900.0,
        )
        turns = await store.turns.for_conversation(conv.id)
        assert [t.assistant for t in turns] == ["Have a good flight.", "The Louvre."]
        assert "abandoned" not in " ".join(t.user for t in turns)
        assert turns[1].user.startswith("What is this building?")
        assert "[image not imported: file-service://file-abc, 2048 bytes]" in turns[1].user
        assert await said_at(store, f"t{turns[0].id}") == 1700000100.0


async def test_chatgpt_zip_is_read_too(tmp_path: Path) -> None:
    import zipfile

    zipped = tmp_path / "export.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.write(FIXTURES / "chatgpt_conversations.json", "conversations.json")
    async with await Store.open(tmp_path / "n.db") as store:
        assert len((await run(store, zipped)).imported) == 1


async def test_claude_export_with_its_dates_and_attachment(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "n.db") as store:
        summary = await run(store, FIXTURES / "claude_conversations.json")
        assert len(summary.imported) == 1
        assert summary.refused[0][0] == "cl-2" and "robot" in summary.refused[0][1]
        (conv,) = await store.conversations.list()
        (turn,) = await store.turns.for_conversation(conv.id)
        assert conv.title == "Dentist"
        assert turn.user.startswith("My dentist appointment is on Feb 20.")
        assert "[file not imported: referral.pdf, 1234 bytes]" in turn.user
        assert turn.assistant == "Noted: Feb 20."
        # 2024-02-01T09:00:00Z
        assert turn.created_at == 1706778000.0 == await said_at(store, f"r{turn.id}")


async def _seed(store: Store) -> str:
    """A newt conversation of two dated turns, as newt itself writes it."""
    store.db.clock = lambda: 1650000000.0
    conv = await store.conversations.create(model="m")
    for n, (q, a) in enumerate([("my cat is Miso", "noted"), ("and my dog?", "Rex")]):
        store.db.clock = lambda n=n: 1650000000.0 + 3600 * n
        turn_id = await store.turns.add_pending(conv.id, q)
        await store.turns.complete(turn_id, a)
    return conv.id


async def test_newt_json_round_trips(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "a.db") as first:
        conv_id = await _seed(first)
        conv = await first.conversations.get(conv_id)
        assert conv is not None
        exported = await export_conversation(first, conv, "json")
        before = [
            (t.user, t.assistant, t.created_at) for t in await first.turns.for_conversation(conv_id)
        ]
    path = tmp_path / "conv.json"
    path.write_text(exported)
    async with await Store.open(tmp_path / "b.db") as second:
        assert len((await run(second, path)).imported) == 1
        got = await second.conversations.get(conv_id)
        assert got is not None
        assert (got.title, got.created_at, got.updated_at) == (
            conv.title,
            conv.created_at,
            conv.updated_at,
        )
        turns = await second.turns.for_conversation(conv_id)
        assert [(t.user, t.assistant, t.created_at) for t in turns] == before
        assert json.loads(await export_conversation(second, got, "json")) == json.loads(exported)


async def test_jsonl_holds_one_conversation_a_line(tmp_path: Path) -> None:
    lines = [
        {
            "id": f"c{n}",
            "title": f"t{n}",
            "created_at": 1.0e9 + n,
            "turns": [{"user": f"u{n}", "assistant": f"a{n}", "created_at": 1.0e9 + n}],
        }
        for n in range(3)
    ]
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    async with await Store.open(tmp_path / "n.db") as store:
        assert len((await run(store, path)).imported) == 3
        assert sorted(c.title for c in await store.conversations.list()) == ["t0", "t1", "t2"]


@pytest.mark.parametrize("fixture", ["chatgpt_conversations.json", "claude_conversations.json"])
async def test_importing_twice_adds_nothing(tmp_path: Path, fixture: str) -> None:
    db = tmp_path / "n.db"
    async with await Store.open(db) as store:
        await run(store, FIXTURES / fixture)
    once = counts(db)
    async with await Store.open(db) as store:
        again = await run(store, FIXTURES / fixture)
    forks = {"chatgpt_conversations.json": 1, "claude_conversations.json": 0}[fixture]
    assert counts(db) == once and once[0] == 1 + forks
    assert again.imported == [] and [why for _, why in again.skipped] == ["already imported"]


async def test_importing_newts_own_export_into_its_store_adds_nothing(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    async with await Store.open(db) as store:
        conv = await store.conversations.get(await _seed(store))
        assert conv is not None
        path = tmp_path / "c.json"
        path.write_text(await export_conversation(store, conv, "json"))
    before = counts(db)
    async with await Store.open(db) as store:
        summary = await run(store, path)
    assert counts(db) == before and summary.skipped == [(conv.id, "already in this store")]


MALFORMED = {
    "chatgpt": '{"mapping": {}}',
    "claude": '[{"uuid": "x", "name": "no messages key"}]',
    "newt": '{"id": "x", "turns": [{"user": "a", "created_at": 1}]}\n{"id": "y", "tur',
}


@pytest.mark.parametrize("source", sorted(MALFORMED))
def test_a_malformed_file_is_refused_by_name_and_changes_nothing(
    tmp_path: Path, source: str
) -> None:
    path = tmp_path / f"bad-{source}.json"
    path.write_text(MALFORMED[source])
    config = make_config("http://127.0.0.1:9/v1")
    assert config.db_path is not None
    ok = tmp_path / "ok.jsonl"
    ok.write_text(
        json.dumps(
            {
                "id": "k",
                "title": "t",
                "created_at": 1.0,
                "turns": [{"user": "u", "assistant": "a", "created_at": 1.0}],
            }
        )
    )
    assert import_main([str(ok)], err=io.StringIO()) == 0
    before = counts(config.db_path)
    err = io.StringIO()
    assert import_main([str(path), "--from", source], err=err) == 2
    assert counts(config.db_path) == before
    assert str(path) in err.getvalue() and "nothing was imported" in err.getvalue()


def test_a_file_of_no_known_kind_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text('{"hello": 1}')
    with pytest.raises(ImportFormatError, match="not an export newt knows"):
        read_source(path)


def test_the_command_counts_imported_skipped_and_refused(tmp_path: Path) -> None:
    make_config("http://127.0.0.1:9/v1")
    path = str(FIXTURES / "chatgpt_conversations.json")
    err = io.StringIO()
    assert import_main([path, "--dry-run"], err=err) == 0
    assert "would import 1 conversation(s) and 1 other branch(es) as forks, 3 turn(s)" in (
        err.getvalue()
    )
    err = io.StringIO()
    assert import_main([path], err=err) == 0
    assert (
        "imported 1 conversation(s) and 1 other branch(es) as forks, 3 turn(s);"
        " skipped 0 already there; refused 1"
    ) in err.getvalue()
    assert "refused cg-2" in err.getvalue()
    err = io.StringIO()
    import_main([path], err=err)
    assert "imported 0 conversation(s), 0 turn(s); skipped 1 already there" in err.getvalue()


def _long_conversation(turns: int) -> dict[str, object]:
    start = 1_600_000_000.0
    rows = []
    for n in range(turns):
        user = f"question {n}: " + "tell me more about the garden " * 3
        if n == 3:
            user = "My passport number is PX-88231, please remember it."
        rows.append(
            {
                "user": user,
                "assistant": f"answer {n}: " + "lorem ipsum " * 8,
                "created_at": start + 86400 * n,
            }
        )
    return {"id": "long", "title": "A long one", "created_at": start, "turns": rows}


async def test_a_resumed_import_folds_and_recalls_an_old_fact(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    config = make_config(fake_openai.base_url, "[memory]\ncontext_tokens = 2000\n")
    assert config.db_path is not None
    path = tmp_path / "long.json"
    path.write_text(json.dumps(_long_conversation(200)))
    assert await run_import(config.db_path, path, None, dry_run=False, err=io.StringIO()) == 0
    store = await Store.open(config.db_path)
    session = await ChatSession.open(config, store)
    try:
        await session.conversations.resume("long")
        status = session.memory_status()
        assert status.resident_turns < 200 and status.used <= status.budget
        fake_openai.script(Reply(text="PX-88231"))
        events = await run_turn(session, "What is my passport number?")
        assert any(isinstance(e, ev.TurnDone) for e in events)
        sent = json.dumps(fake_openai.chat_requests[-1].body["messages"])
        assert "PX-88231" in sent
        record = await store.records.get(f"t{(await store.turns.for_conversation('long'))[3].id}")
        assert record is not None and record.said_at == 1_600_000_000.0 + 86400 * 3
    finally:
        await session.close()
        await store.close()


def test_newt_import_is_a_command_of_newt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`newt import PATH` goes through newt's own entry point, then the import is listed."""
    from newt.cli.main import main

    make_config("http://127.0.0.1:9/v1")
    assert main(["import", str(FIXTURES / "claude_conversations.json")]) == 0
    assert "imported 1 conversation(s)" in capsys.readouterr().err
    assert main(["list"]) == 0
    assert "Dentist" in capsys.readouterr().out
