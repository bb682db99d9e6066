"""`newt -p` as a script would run it: real subprocess, fake server, real database."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from newt.store import Store
from tests.support.fake_openai import ErrorReply, FakeOpenAI, Reply
from tests.support.paths import FAKE_SERVER
from tests.support.session_helpers import MODEL, newt_cmd


def args(fake: FakeOpenAI, *extra: str) -> list[str]:
    return ["--base-url", fake.base_url, "--model", MODEL, *extra]


def test_print_streams_reply_and_exits_zero(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    fake_openai.script(Reply(text="The answer is 42."))
    result = newt_cmd(*args(fake_openai, "-p", "what is the answer?"), home=_isolated_home)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The answer is 42.\n"
    assert fake_openai.chat_requests[-1].body["messages"][-1]["content"] == "what is the answer?"


def test_print_reads_stdin(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    fake_openai.script(Reply(text="summarised"))
    result = newt_cmd(
        *args(fake_openai, "-p", "-"), home=_isolated_home, stdin="a long piped document\n"
    )
    assert result.returncode == 0, result.stderr
    assert fake_openai.chat_requests[-1].body["messages"][-1]["content"] == (
        "a long piped document\n"
    )


def test_a_message_larger_than_the_window_is_not_sent(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    """A paste larger than the model's window is refused before
    anything is sent or stored (the server took ~45 s to refuse it), with
    both numbers and what can help; exit status 2 (bad input)."""
    paste = "All work and no play makes Jack a dull boy. " * 1200
    result = newt_cmd(*args(fake_openai, "-p", "-"), home=_isolated_home, stdin=paste)
    assert result.returncode == 2, result.stderr
    assert "newt: error: not sent: this message alone is about" in result.stderr
    assert "larger than the model's window of 4,096 tokens" in result.stderr
    assert "split it into parts" in result.stderr and "(--model)" in result.stderr
    assert fake_openai.chat_requests == [] and result.stdout == ""
    con = sqlite3.connect(_isolated_home / "newt.db")
    try:
        assert con.execute("SELECT count(*) FROM turns").fetchone() == (0,)
    finally:
        con.close()


def test_json_output(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    fake_openai.script(Reply(text="hi!", prompt_tokens=80, completion_tokens=2))
    result = newt_cmd(*args(fake_openai, "-p", "hello", "--json"), home=_isolated_home)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["reply"] == "hi!"
    assert data["usage"]["prompt_tokens"] == 80 and data["usage"]["completion_tokens"] == 2
    assert data["memory"]["label"] == "tokens"
    # anchored: the reported prompt plus the reply, which the backend counted (2 tokens)
    assert data["memory"]["used"] == 82
    assert data["memory"]["source"] == "backend"  # the fake server's /props n_ctx
    assert data["memory"]["budget"] == int(4096 * 0.8)
    assert isinstance(data["retained_evidence"], dict)
    assert data["compactions"] == [] and data["error"] is None
    assert len(data["conversation_id"]) == 32


def test_continue_and_resume(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    fake_openai.script(
        Reply(text="first reply"), Reply(text="second reply"), Reply(text="third reply")
    )
    first = newt_cmd(*args(fake_openai, "-p", "first", "--json"), home=_isolated_home)
    conv_id = json.loads(first.stdout)["conversation_id"]
    newt_cmd(*args(fake_openai, "-p", "other conversation"), home=_isolated_home)
    # -r with a prefix continues the first conversation, not the latest
    result = newt_cmd(
        *args(fake_openai, "-r", conv_id[:8], "-p", "third", "--json"), home=_isolated_home
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["conversation_id"] == conv_id
    sent = [(m["role"], m["content"]) for m in fake_openai.chat_requests[-1].body["messages"]]
    assert ("user", "first") in sent and ("assistant", "first reply") in sent
    assert ("user", "other conversation") not in sent
    # -c continues the latest one (now the first, just updated)
    fake_openai.script(Reply(text="fourth reply"))
    result = newt_cmd(*args(fake_openai, "-c", "-p", "fourth"), home=_isolated_home)
    assert result.returncode == 0
    sent = [m["content"] for m in fake_openai.chat_requests[-1].body["messages"]]
    assert "third reply" in sent
    listing = newt_cmd("list", home=_isolated_home).stdout
    assert conv_id[:12] in listing


def test_usage_errors_exit_two(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    cases = [
        (args(fake_openai, "-p", "   "), "prompt is empty"),
        (args(fake_openai, "-r", "zzzz", "-p", "hi"), "no conversation with id"),
        (["--base-url", fake_openai.base_url, "-p", "hi"], "no model configured"),
        (["--model", MODEL, "-p", "hi"], "no backend configured"),
        (["export", "nope"], "no conversation with id"),
    ]
    for argv, message in cases:
        result = newt_cmd(*argv, home=_isolated_home)
        assert result.returncode == 2, (argv, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
        assert result.stderr.count("\n") == 1, result.stderr


def test_ambiguous_prefix(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    db = _isolated_home / "newt.db"
    newt_cmd("list", home=_isolated_home)
    con = sqlite3.connect(db)
    for cid in ("abc111", "abc222"):
        con.execute(
            "INSERT INTO conversations(id, created_at, updated_at) VALUES (?, 1, 1)", (cid,)
        )
    con.commit()
    con.close()
    result = newt_cmd(*args(fake_openai, "-r", "abc", "-p", "hi"), home=_isolated_home)
    assert result.returncode == 2 and "give more characters" in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_backend_down_keeps_message_and_exits_one(_isolated_home: Path) -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    result = newt_cmd(
        "--base-url",
        url,
        "--model",
        MODEL,
        "-p",
        "are you there?",
        home=_isolated_home,
        env={"NEWT_RETRY_SCALE": "0"},
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and "newt -c" in result.stderr
    con = sqlite3.connect(_isolated_home / "newt.db")
    rows = con.execute("SELECT user, status FROM turns").fetchall()
    con.close()
    assert rows == [("are you there?", "failed")]


def test_json_reports_the_error_too(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    (_isolated_home / "config.toml").write_text("[backend]\nmax_retries = 0\n")
    fake_openai.script(ErrorReply(401, {"error": {"message": "bad key"}}))
    result = newt_cmd(*args(fake_openai, "-p", "hello", "--json"), home=_isolated_home)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["status"] == "failed" and data["reply"] == ""
    assert data["error"]["kind"] == "AuthenticationError" and not data["error"]["retryable"]
    assert ".. " not in result.stderr and "newt -c -p" in result.stderr


def test_server_errors_exit_one(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    (_isolated_home / "config.toml").write_text("[backend]\nmax_retries = 1\n")
    fake_openai.script(ErrorReply(503), ErrorReply(503))
    result = newt_cmd(*args(fake_openai, "-p", "hello"), home=_isolated_home)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(fake_openai.chat_requests) == 2


def test_escape_sequences_never_reach_the_terminal(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    fake_openai.script(Reply(text="safe \x1b]0;pwned\x07text\x1b[2J here\x1b[31m!"))
    result = newt_cmd(*args(fake_openai, "-p", "hi"), home=_isolated_home)
    assert result.stdout == "safe text here!\n"


def test_export_markdown_and_json(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    fake_openai.script(Reply(text="Use a **trellis**."))
    first = newt_cmd(*args(fake_openai, "-p", "how do I grow peas?", "--json"), home=_isolated_home)
    conv_id = json.loads(first.stdout)["conversation_id"]
    md = newt_cmd("export", conv_id[:6], home=_isolated_home)
    assert md.returncode == 0
    assert "## User\n\nhow do I grow peas?" in md.stdout and "Use a **trellis**." in md.stdout
    js = newt_cmd("export", conv_id, "--format", "json", home=_isolated_home)
    data = json.loads(js.stdout)
    assert data["id"] == conv_id and data["turns"][0]["assistant"] == "Use a **trellis**."


def test_sigkill_mid_stream_leaves_a_clean_database(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    fake_openai.script(Reply(text="a finished answer"))
    assert newt_cmd(*args(fake_openai, "-p", "first question"), home=_isolated_home).returncode == 0
    fake_openai.script(Reply(text="word " * 200, chunk_size=5, delay_s=0.05))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["NEWT_HOME"] = str(_isolated_home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "newt", *args(fake_openai, "-c", "-p", "second question")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    assert proc.stdout.read(10)  # the reply is streaming
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    con = sqlite3.connect(_isolated_home / "newt.db")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = con.execute("SELECT user, assistant, status FROM turns ORDER BY id").fetchall()
    con.close()
    assert rows == [
        ("first question", "a finished answer", "complete"),
        ("second question", "", "pending"),
    ]
    # and the conversation carries on
    fake_openai.script(Reply(text="carrying on"))
    result = newt_cmd(*args(fake_openai, "-c", "-p", "third"), home=_isolated_home)
    assert result.returncode == 0 and result.stdout == "carrying on\n"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_keeps_the_partial_reply(fake_openai: FakeOpenAI, _isolated_home: Path) -> None:
    fake_openai.script(Reply(text="word " * 200, chunk_size=5, delay_s=0.05))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["NEWT_HOME"] = str(_isolated_home)
    proc = subprocess.Popen(
        [sys.executable, "-m", "newt", *args(fake_openai, "-p", "talk")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        # a shell running us in the background ignores SIGINT, and children
        # inherit that; a user's terminal delivers it, so restore the default
        preexec_fn=_default_sigint,
    )
    assert proc.stdout is not None
    assert proc.stdout.read(10)
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"newt did not exit after Ctrl-C: {proc.communicate()[1]!r}") from None
    assert code == 130
    con = sqlite3.connect(_isolated_home / "newt.db")
    user, assistant, status = con.execute("SELECT user, assistant, status FROM turns").fetchone()
    con.close()
    assert (user, status) == ("talk", "interrupted")
    assert assistant.startswith("word word") and len(assistant) < len("word " * 200)


def test_local_runs_a_managed_server_and_stops_it(tmp_path: Path, _isolated_home: Path) -> None:
    # a stand-in for llama-server (the fake speaks its flags); the real one is in the e2e tests
    fake = FAKE_SERVER
    pidfile = tmp_path / "server.pid"
    binary = tmp_path / "llama-server"
    binary.write_text(f'#!/bin/sh\necho $$ > "{pidfile}"\nexec "{sys.executable}" "{fake}" "$@"\n')
    binary.chmod(0o755)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    result = newt_cmd(
        "--local",
        str(model),
        "-p",
        "hello local",
        "--json",
        home=_isolated_home,
        # an empty cache: no MiniLM GGUF, so no second server
        # (tests/unit/local/models/test_local_embeddings.py)
        env={"NEWT_LLAMA_SERVER": str(binary), "NEWT_LLAMA_CACHE": str(tmp_path / "cache")},
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["reply"] == "ok: hello local"
    assert data["memory"]["source"] == "backend"  # read from the managed server's /props
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        if stat in ("Z", "X"):
            break
        time.sleep(0.05)
    alive = Path(f"/proc/{pid}").exists() and Path(f"/proc/{pid}/stat").read_text().split(")")[
        -1
    ].split()[0] not in ("Z", "X")
    assert not alive, "the managed llama-server outlived newt"


def test_local_without_a_binary_says_how_to_get_one(tmp_path: Path, _isolated_home: Path) -> None:
    (tmp_path / "none.gguf").write_bytes(b"GGUF")  # the model is there, the server is not
    result = newt_cmd(
        "--local",
        str(tmp_path / "none.gguf"),
        "-p",
        "hi",
        home=_isolated_home,
        env={
            "NEWT_LLAMA_SERVER": str(tmp_path / "missing"),
            "NEWT_LLAMA_CACHE": str(tmp_path / "cache"),
            "PATH": "/usr/bin:/bin",
        },
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "get_llama_server.sh" in result.stderr


def test_error_bodies_and_exports_carry_no_escape_sequences(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    (_isolated_home / "config.toml").write_text("[backend]\nmax_retries = 0\n")
    fake_openai.script(ErrorReply(400, {"error": {"message": "bad \x1b]0;PWNED\x07\x1b[31mred"}}))
    result = newt_cmd(*args(fake_openai, "-p", "hi"), home=_isolated_home)
    assert result.returncode == 1
    assert "\x1b" not in result.stderr and "bad red" in result.stderr
    fake_openai.script(Reply(text="copy \x1b]52;c;cm0gLXJmIH4=\x07this \x9b2Jnow"))
    first = newt_cmd(*args(fake_openai, "-c", "-p", "hi again", "--json"), home=_isolated_home)
    assert "\x1b" not in first.stdout and "\x9b" not in first.stdout
    conv_id = json.loads(first.stdout)["conversation_id"]
    md = newt_cmd("export", conv_id, home=_isolated_home).stdout
    assert "copy this now" in md and "\x1b" not in md and "\x9b" not in md
    js = newt_cmd("export", conv_id, "--format", "json", home=_isolated_home).stdout
    assert "\x1b" not in js and "\x9b" not in js
    # the JSON export keeps the stored text verbatim, as escapes
    assert json.loads(js)["turns"][-1]["assistant"].startswith("copy \x1b]52;")


def test_cut_off_stream_is_kept_but_exits_one(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    fake_openai.script(Reply(text="half of a long answer", chunk_size=4, disconnect_after_chunks=3))
    result = newt_cmd(*args(fake_openai, "-p", "tell me"), home=_isolated_home)
    assert result.returncode == 1 and "cut off" in result.stderr
    assert result.stdout == "half of a lo\n"
    con = sqlite3.connect(_isolated_home / "newt.db")
    row = con.execute("SELECT assistant, status FROM turns").fetchone()
    con.close()
    assert row == ("half of a lo", "interrupted")


def test_bad_base_url_is_a_usage_error(_isolated_home: Path) -> None:
    result = newt_cmd(
        "--base-url", "localhost:8080", "--model", MODEL, "-p", "hi", home=_isolated_home
    )
    assert result.returncode == 2 and "not an http(s) URL" in result.stderr
    assert not (_isolated_home / "newt.db").exists()  # refused before anything was stored


def test_a_compacting_turn_returns_before_its_summary_is_written(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    """`newt -p` gives the prompt back with the fallback record
    stored; a detached newt writes the summary and stores it as the newest record."""
    config = _isolated_home / "config.toml"
    config.write_text("[memory]\ncontext_tokens = 8000\n[recall]\nretained_token_budget = 0\n")
    for i in range(5):
        fake_openai.script(Reply(text=f"answer {i}: " + "lorem ipsum " * 12))
        result = newt_cmd(
            *args(fake_openai, *(["-c"] if i else []), "-p", f"question {i}: " + "more " * 30),
            home=_isolated_home,
        )
        assert result.returncode == 0, result.stderr
    db = _isolated_home / "newt.db"
    # a smaller window from now on: the next turn folds the early ones
    config.write_text("[memory]\ncontext_tokens = 600\n[recall]\nretained_token_budget = 0\n")
    # the summarizer answers slowly: the turn that compacts must not wait for it
    fake_openai.script(
        Reply(text="a reply that compacts " + "words " * 40),
        Reply(text="the summary of the early questions", first_byte_delay_s=3.0),
    )
    started = time.monotonic()
    result = newt_cmd(*args(fake_openai, "-c", "-p", "one more " * 20), home=_isolated_home)
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert took < 3.0, f"waited {took:.1f} s for the summary"

    def records() -> list[str]:
        conn = sqlite3.connect(db)
        try:
            rows = conn.execute("SELECT user FROM turns WHERE kind = 'compaction' ORDER BY id")
            return [r[0] for r in rows]
        finally:
            conn.close()

    assert "message(s) were removed" in records()[-1]  # the fallback stands in at once
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "the summary of the early" not in records()[-1]:
        time.sleep(0.2)
    assert "the summary of the early questions" in records()[-1]
    # the detached writer's summary request starts as the turn's chat request did
    # (its system message, its tools): a one-slot server keeps that start
    chat, summary = fake_openai.chat_requests[-2:]
    assert chat.body["stream"] and not summary.body.get("stream")
    assert summary.body["messages"][0] == chat.body["messages"][0]
    assert summary.body.get("tools") == chat.body.get("tools")
    assert "Turns removed from the conversation" in summary.body["messages"][1]["content"]


def test_json_retained_evidence_never_exceeds_its_budget(
    fake_openai: FakeOpenAI, _isolated_home: Path
) -> None:
    # many short related messages fill the block to its budget: what it
    # reports is the block as sent, counted as the request is counted
    (_isolated_home / "config.toml").write_text(
        '[memory]\ncontext_tokens = 2048\n\n[recall]\nembeddings = "off"\n'
    )

    async def seed() -> None:
        async with await Store.open(_isolated_home / "newt.db") as store:
            for c in range(4):
                conv = await store.conversations.create()
                for i in range(30):
                    turn = await store.turns.add_pending(
                        conv.id, f"Harbor locker {c}-{i} opens with code {4000 + i}."
                    )
                    await store.turns.complete(turn, f"Noted: harbor locker {c}-{i}.")

    asyncio.run(seed())
    fake_openai.script(Reply(text="ok"))
    result = newt_cmd(
        *args(fake_openai, "-p", "Which code opens the harbor locker?", "--json"),
        home=_isolated_home,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["retained_evidence"]
    assert len(report["capsules"]) > 10
    assert report["budget_tokens"] * 0.8 < report["retained_tokens"] <= report["budget_tokens"]
