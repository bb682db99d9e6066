"""`@path` attachments: text files within a share of the window, images as parts.

Against the fake server (request bodies checked) and the real store; the
rejection of an image by a text-only llama-server is in test_llama_images.py.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest

from newt.agent import events as ev
from newt.agent.session.chat_session import ChatSession
from newt.agent.turn.attachments import (
    ATTACHMENT_WINDOW_SHARE,
    AttachmentError,
    complete_path,
    mentions,
    prepare,
)
from newt.backend.classify import classify_error
from newt.backend.errors import ImagesUnsupportedError
from newt.recall import RecallRequest
from tests.support.fake_openai import LLAMA_NO_IMAGES, FakeOpenAI, Reply
from tests.support.images import PNG
from tests.support.session_helpers import done_of, make_config, newt_cmd, run_turn

NO_RECALL = "[recall]\nretained_token_budget = 0\n"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


async def open_session(fake: FakeOpenAI, config_text: str = NO_RECALL) -> ChatSession:
    return await ChatSession.open(make_config(fake.base_url, config_text))


def last_user_content(fake: FakeOpenAI) -> Any:
    return fake.chat_requests[-1].body["messages"][-1]["content"]


def test_mentions_find_paths_but_not_emails() -> None:
    text = 'read @notes.txt and @"my file.md", mail bob@example.com, ask @alice'
    assert [p for _, p in mentions(text)] == ["notes.txt", "my file.md", "alice"]


def test_a_word_that_names_no_file_and_no_path_is_plain_text(workdir: Path) -> None:
    prepared = prepare(
        "thanks @alice!", cwd=workdir, context_tokens=4096, tokens_for=len, images=None
    )
    assert prepared.text == "thanks @alice!" and prepared.refs == []


def test_errors_for_missing_binary_oversized_and_directories(workdir: Path) -> None:
    (workdir / "bin.dat").write_bytes(b"\x00\x01\x02binary")
    (workdir / "big.txt").write_text("x" * 5000)
    (workdir / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (workdir / "sub").mkdir()

    def attempt(text: str) -> str:
        with pytest.raises(AttachmentError) as info:
            prepare(text, cwd=workdir, context_tokens=4096, tokens_for=len, images=None)
        return str(info.value)

    assert "no such file" in attempt("see @missing.txt")
    assert "binary" in attempt("see @bin.dat")
    assert "not UTF-8" in attempt("see @latin1.txt")
    assert "directory" in attempt("see @sub")
    message = attempt("see @big.txt")
    share = int(4096 * ATTACHMENT_WINDOW_SHARE)
    assert "too large" in message and f"{share:,}" in message and "4,096-token" in message


def test_paths_resolve_against_cwd_and_home(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / "docs").mkdir(parents=True)
    (home / "docs" / "plan.txt").write_text("the plan")
    monkeypatch.setenv("HOME", str(home))
    (workdir / "a.txt").write_text("alpha")
    prepared = prepare(
        "compare @a.txt with @~/docs/plan.txt.",
        cwd=workdir,
        context_tokens=4096,
        tokens_for=len,
        images=None,
    )
    assert '<attachment path="a.txt">\nalpha\n</attachment>' in prepared.text
    assert '<attachment path="~/docs/plan.txt">\nthe plan\n</attachment>' in prepared.text
    assert prepared.text.startswith("compare @a.txt with @~/docs/plan.txt.\n\n")
    assert [r["sha256"] for r in prepared.refs] == [
        hashlib.sha256(b"alpha").hexdigest(),
        hashlib.sha256(b"the plan").hexdigest(),
    ]


def test_path_completion_lists_matching_entries(workdir: Path) -> None:
    (workdir / "src").mkdir()
    (workdir / "src" / "main.py").write_text("")
    (workdir / "setup.cfg").write_text("")
    (workdir / ".hidden").write_text("")
    assert complete_path("s", workdir) == ["setup.cfg", "src/"]
    assert complete_path("src/m", workdir) == ["src/main.py"]
    assert complete_path("nothing/", workdir) == []


async def test_a_text_attachment_is_sent_stored_and_recallable(
    fake_openai: FakeOpenAI, workdir: Path
) -> None:
    (workdir / "notes.txt").write_text("The launch code is PELICAN-42.\n")
    # a reply that does not repeat the code: only the user's record (t<turn>) holds it
    fake_openai.script(Reply(text="It gives the launch code."))
    session = await open_session(fake_openai)
    done = done_of(await run_turn(session, "summarize @notes.txt"))
    assert done.status == "complete"
    sent = last_user_content(fake_openai)
    assert sent.startswith('summarize @notes.txt\n\n<attachment path="notes.txt">')
    assert "PELICAN-42" in sent
    stored = (await session.log.history())[-1]
    assert stored.user == sent  # stored as sent: restore and recall see what the model saw
    assert stored.attachments[0]["kind"] == "text"
    assert stored.attachments[0]["path"] == str(workdir / "notes.txt")
    assert await session.edits.last_prompt() == "summarize @notes.txt"  # /edit gets the typed words
    [shown] = await session.edits.history()  # the chat view: the typed prompt and the file's name
    assert (shown.user, shown.attached) == ("summarize @notes.txt", ["notes.txt"])
    found = await session.recall.recall(RecallRequest("PELICAN-42"))
    # found by its words in the user's record; the reply (r<turn>) may come along by meaning
    top = found.memories[0]
    assert top.key == f"t{stored.id}" and "PELICAN-42" in top.content
    assert {r.key for r in found.memories} <= {f"t{stored.id}", f"r{stored.id}"}
    await session.close()


async def test_a_bad_attachment_sends_and_stores_nothing(
    fake_openai: FakeOpenAI, workdir: Path
) -> None:
    (workdir / "blob.bin").write_bytes(b"\x00" * 64)
    session = await open_session(fake_openai)
    with pytest.raises(AttachmentError, match="binary"):
        await run_turn(session, "look at @blob.bin")
    assert fake_openai.chat_requests == []
    assert await session.log.history() == []
    await session.close()


async def test_an_image_rides_as_an_image_part_and_is_stored_by_reference(
    fake_openai: FakeOpenAI, workdir: Path
) -> None:
    (workdir / "dot.png").write_bytes(PNG)
    session = await open_session(fake_openai)
    done = done_of(await run_turn(session, "what is in @dot.png"))
    assert done.status == "complete"
    content = last_user_content(fake_openai)
    assert isinstance(content, list) and content[0]["type"] == "text"
    assert content[1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()},
    }
    stored = (await session.log.history())[-1]
    digest = hashlib.sha256(PNG).hexdigest()
    assert stored.attachments[0] | {"at": 0} == {
        "path": str(workdir / "dot.png"),
        "size": len(PNG),
        "sha256": digest,
        "kind": "image",
        "mime": "image/png",
        "at": 0,
    }
    assert f"[image dot.png: {len(PNG)} bytes, sha256 {digest[:12]}]" in stored.user
    # never inlined in the database
    cur = await session.store.db.conn.execute("SELECT group_concat(user || attachments) FROM turns")
    row = await cur.fetchone()
    assert base64.b64encode(PNG).decode()[:40] not in row[0]
    # the next turn carries the reference line, not the image
    await run_turn(session, "thanks")
    assert all(
        isinstance(m["content"], str) for m in fake_openai.chat_requests[-1].body["messages"]
    )
    await session.close()


async def test_a_regenerate_sends_the_image_again_by_reference(
    fake_openai: FakeOpenAI, workdir: Path
) -> None:
    (workdir / "dot.png").write_bytes(PNG)
    session = await open_session(fake_openai)
    await run_turn(session, "describe @dot.png")
    first = last_user_content(fake_openai)
    done = done_of([e async for e in session.turns.regenerate()])
    assert done.status == "complete"
    assert last_user_content(fake_openai) == first
    (workdir / "dot.png").write_bytes(PNG + b"changed")
    with pytest.raises(AttachmentError, match="changed since"):
        [e async for e in session.turns.regenerate()]
    # the refused regenerate left the conversation as it was
    assert [h.user.split("\n")[0] for h in await session.edits.history()] == ["describe @dot.png"]
    await session.close()


async def test_an_image_refused_by_the_backend_is_remembered_and_explained(
    fake_openai: FakeOpenAI, workdir: Path
) -> None:
    fake_openai.accepts_images = False
    (workdir / "dot.png").write_bytes(PNG)
    session = await open_session(fake_openai)
    events = await run_turn(session, "what is in @dot.png")
    errors = [e for e in events if isinstance(e, ev.TurnError)]
    assert done_of(events).status == "failed"
    assert "does not accept images" in errors[0].message
    assert "image input is not supported" in errors[0].message
    assert "remove the @image" in errors[0].message
    assert len(fake_openai.chat_requests) == 1  # a refusal is not retried
    # the turn is not lost: its words are stored (failed), for the prompt bar
    stored = (await session.log.history())[-1]
    assert stored.status == "failed" and stored.user.startswith("what is in @dot.png")
    # remembered: the next image is refused before anything is sent, also after a restart
    await session.close()
    session = await open_session(fake_openai)
    with pytest.raises(AttachmentError, match="does not accept images"):
        await run_turn(session, "and @dot.png?")
    assert len(fake_openai.chat_requests) == 1
    # text still goes through
    assert done_of(await run_turn(session, "just text")).status == "complete"
    await session.close()


async def test_an_accepted_image_is_remembered_as_supported(
    fake_openai: FakeOpenAI, workdir: Path
) -> None:
    (workdir / "dot.png").write_bytes(PNG)
    session = await open_session(fake_openai)
    await run_turn(session, "what is in @dot.png")
    from newt.store.image_support import ImageSupportRepo

    known = await ImageSupportRepo(session.store.db).get(session.base_url, session.model)
    assert known == (True, "")
    await session.close()


def test_the_classifier_tells_an_image_refusal_from_other_errors() -> None:
    import json

    body = json.dumps(LLAMA_NO_IMAGES)
    err = classify_error(500, body, sent_images=True)
    assert isinstance(err, ImagesUnsupportedError) and not err.retryable
    assert "image input is not supported" in err.detail
    assert not isinstance(classify_error(500, body, sent_images=False), ImagesUnsupportedError)
    openai = json.dumps(
        {
            "error": {
                "message": "Invalid content type. image_url is only supported by certain models."
            }
        }
    )
    assert isinstance(classify_error(400, openai, sent_images=True), ImagesUnsupportedError)


def test_print_mode_attaches_and_refuses_like_the_tui(
    fake_openai: FakeOpenAI, workdir: Path, _isolated_home: Path
) -> None:
    (workdir / "notes.txt").write_text("The launch code is PELICAN-42.\n")
    (workdir / "blob.bin").write_bytes(b"\x00" * 32)
    base = ["--base-url", fake_openai.base_url, "--model", "fake-model"]
    ok = newt_cmd(*base, "-p", "summarize @notes.txt", home=_isolated_home)
    assert ok.returncode == 0, ok.stderr
    assert "PELICAN-42" in last_user_content(fake_openai)
    bad = newt_cmd(*base, "-p", "what is @blob.bin", home=_isolated_home)
    assert bad.returncode == 2
    assert "binary file" in bad.stderr and "Traceback" not in bad.stderr
    assert len(fake_openai.chat_requests) == 1


def test_a_title_is_what_the_user_typed_not_the_attached_file() -> None:
    from newt.store import make_title

    stored = 'explain @code.py please\n\n<attachment path="code.py">\ndef add(a, b):\n</attachment>'
    assert make_title(stored) == "explain @code.py please"
