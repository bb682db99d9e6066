"""Numbered schema migrations, applied in order and recorded in `schema_migrations`.

Each migration is a function `mNNN_name(conn)` that runs inside the migration
transaction. Never edit a released migration: add a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable

import aiosqlite

Migration = Callable[[aiosqlite.Connection], Awaitable[None]]


async def run_script(conn: aiosqlite.Connection, script: str) -> None:
    """Run statements one by one: `executescript` would COMMIT the migration
    transaction half-way, leaving a half-migrated database after a failure."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                await conn.execute(pending)
            pending = ""
    if pending.strip():
        raise ValueError(f"incomplete SQL statement in migration: {pending!r}")


async def m001_initial(conn: aiosqlite.Connection) -> None:
    await run_script(
        conn,
        """
        CREATE TABLE conversations (
            id          TEXT PRIMARY KEY,
            title       TEXT NOT NULL DEFAULT '',
            model       TEXT NOT NULL DEFAULT '',
            base_url    TEXT NOT NULL DEFAULT '',
            created_at  REAL NOT NULL,
            updated_at  REAL NOT NULL
        );
        CREATE INDEX conversations_updated ON conversations(updated_at);

        -- The durable log of a conversation; append-only apart from a pending
        -- turn being completed. kind 'compaction' rows carry a compaction record
        -- in `user`, an empty `assistant` and NULL token columns.
        CREATE TABLE turns (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            kind            TEXT NOT NULL DEFAULT 'turn' CHECK (kind IN ('turn', 'compaction')),
            status          TEXT NOT NULL DEFAULT 'complete'
                            CHECK (status IN ('pending', 'complete', 'interrupted', 'failed')),
            user            TEXT NOT NULL,
            assistant       TEXT NOT NULL DEFAULT '',
            tokens_in       INTEGER,
            tokens_out      INTEGER,
            resident_turns  INTEGER,
            used_after      INTEGER,
            tool_events     TEXT NOT NULL DEFAULT '[]',
            error           TEXT,
            created_at      REAL NOT NULL
        );
        CREATE INDEX turns_conversation ON turns(conversation_id, id);

        CREATE TABLE notes (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            content     TEXT NOT NULL UNIQUE,
            created_at  REAL NOT NULL
        );
        """,
    )


async def m002_memory_records(conn: aiosqlite.Connection) -> None:
    # Every completed turn, note and compaction summary is a memory record.
    # The FTS5 table is an external-content index kept in step by triggers, so
    # deletes and updates can never leave it inconsistent.
    await run_script(
        conn,
        """
        CREATE TABLE memory_records (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            key             TEXT NOT NULL UNIQUE,
            source          TEXT NOT NULL CHECK (source IN ('turn', 'note', 'compaction')),
            conversation_id TEXT REFERENCES conversations(id) ON DELETE CASCADE,
            turn_id         INTEGER REFERENCES turns(id) ON DELETE CASCADE,
            note_id         INTEGER REFERENCES notes(id) ON DELETE CASCADE,
            content         TEXT NOT NULL,
            access_count    INTEGER NOT NULL DEFAULT 0,
            created_at      REAL NOT NULL
        );
        CREATE INDEX memory_records_turn ON memory_records(turn_id);
        CREATE INDEX memory_records_note ON memory_records(note_id);

        CREATE VIRTUAL TABLE memory_fts USING fts5(
            content, content='memory_records', content_rowid='id',
            tokenize='unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memory_records_ai AFTER INSERT ON memory_records BEGIN
            INSERT INTO memory_fts(rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER memory_records_ad AFTER DELETE ON memory_records BEGIN
            INSERT INTO memory_fts(memory_fts, rowid, content)
                VALUES ('delete', old.id, old.content);
        END;
        CREATE TRIGGER memory_records_au AFTER UPDATE OF content ON memory_records BEGIN
            INSERT INTO memory_fts(memory_fts, rowid, content)
                VALUES ('delete', old.id, old.content);
            INSERT INTO memory_fts(rowid, content) VALUES (new.id, new.content);
        END;
        """,
    )


async def m003_model_capabilities(conn: aiosqlite.Connection) -> None:
    await run_script(
        conn,
        """
        CREATE TABLE model_capabilities (
            base_url        TEXT NOT NULL,
            model           TEXT NOT NULL,
            context_window  INTEGER,
            max_ok_input    INTEGER,
            safe_context    INTEGER,
            overflow_at     INTEGER,
            supports_tools  INTEGER,
            -- measured characters per backend token, learned from the backend's
            -- own usage reports; calibrates estimates between reports
            chars_per_token REAL,
            updated_at      REAL NOT NULL,
            PRIMARY KEY (base_url, model)
        );
        """,
    )


async def m004_estimate_glue(conn: aiosqlite.Connection) -> None:
    # The chat template's token cost per message and per reply, learned with
    # chars_per_token; kept so a reopened session estimates exactly as before.
    await run_script(
        conn,
        """
        ALTER TABLE model_capabilities ADD COLUMN per_message_tokens REAL;
        ALTER TABLE model_capabilities ADD COLUMN per_reply_tokens REAL;
        """,
    )


async def m005_stemmed_index(conn: aiosqlite.Connection) -> None:
    # Porter stemming over the same unicode61 tokens, so `codes` finds `code`
    # and `coding`. The index is external-content: dropping and rebuilding it
    # from memory_records loses nothing, and the m002 triggers (which name the
    # table, not its tokenizer) keep working on the new one.
    # The tokenizer must stay in step with newt.recall.tokens.INDEX_TOKENIZER.
    await run_script(
        conn,
        """
        DROP TABLE memory_fts;
        CREATE VIRTUAL TABLE memory_fts USING fts5(
            content, content='memory_records', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        INSERT INTO memory_fts(memory_fts) VALUES ('rebuild');
        """,
    )


async def m006_memory_vectors(conn: aiosqlite.Connection) -> None:
    # Meaning-based recall (newt.recall.vectors): each record's chunks as unit
    # float32 vectors, per embedding space ("<base_url> <model>"), so vectors
    # of two models never mix. An empty blob marks a record that could not be
    # embedded. A record's vectors go with it, and with its old content.
    await run_script(
        conn,
        """
        CREATE TABLE memory_vectors (
            record_id   INTEGER NOT NULL REFERENCES memory_records(id) ON DELETE CASCADE,
            space       TEXT NOT NULL,
            chunk       INTEGER NOT NULL,
            vector      BLOB NOT NULL,
            PRIMARY KEY (record_id, space, chunk)
        );
        CREATE INDEX memory_vectors_space ON memory_vectors(space);
        CREATE TRIGGER memory_records_vectors_au AFTER UPDATE OF content ON memory_records BEGIN
            DELETE FROM memory_vectors WHERE record_id = new.id;
        END;
        """,
    )


async def m007_reply_details(conn: aiosqlite.Connection) -> None:
    # What a reply showed beside its text: the model's reasoning (never sent
    # back, never indexed) and the token counts of its footer as the backend
    # reported them for the whole request (tokens_in/tokens_out stay the
    # memory's figures: without recall capsules, without the reasoning), the
    # streaming time from first to last token, and whether the counts are
    # newt's estimate because the backend reported no usage.
    await run_script(
        conn,
        """
        ALTER TABLE turns ADD COLUMN thinking TEXT NOT NULL DEFAULT '';
        ALTER TABLE turns ADD COLUMN prompt_tokens INTEGER;
        ALTER TABLE turns ADD COLUMN completion_tokens INTEGER;
        ALTER TABLE turns ADD COLUMN reply_seconds REAL;
        ALTER TABLE turns ADD COLUMN tokens_estimated INTEGER NOT NULL DEFAULT 0;
        """,
    )


async def m008_conversation_settings(conn: aiosqlite.Connection) -> None:
    # Per-conversation settings (newt/store/settings.py). A table of its own,
    # not columns of `conversations`: a conversation without a row simply
    # uses the defaults, and the row goes with its conversation.
    await run_script(
        conn,
        """
        CREATE TABLE conversation_settings (
            conversation_id TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
            system_prompt   TEXT,
            temperature     REAL,
            top_p           REAL,
            max_tokens      INTEGER,
            preset          TEXT,
            anchor_shift    INTEGER NOT NULL DEFAULT 0,
            shift_after     INTEGER,
            updated_at      REAL NOT NULL
        );
        """,
    )


async def m009_edits_forks_attachments(conn: aiosqlite.Connection) -> None:
    # Regenerate/edit keep the old turn, marked with the id of the turn that
    # replaced it (its recall record is dropped). A fork's turns are copies:
    # `copied_from` names the original turn, whose recall record they share, so
    # the fork adds nothing to the index. `attachments` lists what a turn's
    # prompt attached, by reference (an image is never stored inline).
    # Backends that refused an image are remembered per model, like tools.
    await run_script(
        conn,
        """
        ALTER TABLE turns ADD COLUMN replaced_by INTEGER;
        ALTER TABLE turns ADD COLUMN copied_from INTEGER;
        ALTER TABLE turns ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]';
        CREATE INDEX turns_copied_from ON turns(copied_from) WHERE copied_from IS NOT NULL;
        ALTER TABLE conversations ADD COLUMN parent_id TEXT;
        ALTER TABLE conversations ADD COLUMN forked_at INTEGER;
        CREATE TABLE model_image_support (
            base_url    TEXT NOT NULL,
            model       TEXT NOT NULL,
            supported   INTEGER NOT NULL,
            detail      TEXT NOT NULL DEFAULT '',
            updated_at  REAL NOT NULL,
            PRIMARY KEY (base_url, model)
        );
        """,
    )


async def m010_records_with_shape(conn: aiosqlite.Connection) -> None:
    # A record says who said it and when, in columns: a turn's words become two
    # records, t<turn> (the user's message, role 'user') and r<turn> (the reply,
    # role 'assistant'), each recalled and scored on its own; a tool result
    # t<turn>.<n> has role 'tool'; notes and summaries have none. `said_at` is
    # when the words were said (the turn's time, not the indexing time).
    # Changing a turn record's content re-indexes it (the m002 trigger) and
    # drops its old vectors (the m006 trigger), so both are rebuilt for the
    # split text.
    await run_script(
        conn,
        """
        ALTER TABLE memory_records ADD COLUMN role TEXT;
        ALTER TABLE memory_records ADD COLUMN said_at REAL;
        UPDATE memory_records SET said_at = coalesce(
            (SELECT t.created_at FROM turns t WHERE t.id = memory_records.turn_id), created_at);
        UPDATE memory_records SET role = 'tool' WHERE source = 'turn' AND key LIKE 't%.%';
        INSERT INTO memory_records(key, source, conversation_id, turn_id, content,
                                   access_count, created_at, role, said_at)
            SELECT 'r' || substr(r.key, 2), 'turn', r.conversation_id, r.turn_id, t.assistant,
                   r.access_count, r.created_at, 'assistant', r.said_at
            FROM memory_records r JOIN turns t ON t.id = r.turn_id
            WHERE r.source = 'turn' AND r.role IS NULL AND t.assistant != '';
        UPDATE memory_records SET role = 'user',
            content = (SELECT t.user FROM turns t WHERE t.id = memory_records.turn_id)
            WHERE source = 'turn' AND role IS NULL AND key LIKE 't%';
        CREATE INDEX memory_records_order ON memory_records(conversation_id, turn_id);
        """,
    )


async def m011_said_at_index(conn: aiosqlite.Connection) -> None:
    # Records by when they were said: recall's newest later statement holding a
    # common word (newt.recall.engine) walks this index from the newest record
    # instead of sorting every record that holds the word.
    await run_script(
        conn,
        """
        CREATE INDEX memory_records_said ON memory_records(said_at);
        """,
    )


async def m012_memory_ownership(conn: aiosqlite.Connection) -> None:
    # The user owns the memory (newt.store.forget). `incognito`: the
    # conversation is kept out of memory, none of its words become records.
    # A note remembers the conversation it was made in, so deleting that
    # conversation takes its notes too (older notes belong to none).
    await run_script(
        conn,
        """
        ALTER TABLE conversations ADD COLUMN incognito INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE notes ADD COLUMN conversation_id TEXT
            REFERENCES conversations(id) ON DELETE CASCADE;
        """,
    )


async def m013_imports(conn: aiosqlite.Connection) -> None:
    # What was brought in from another app (newt.importing): one row per imported
    # conversation, so importing the same file again adds nothing twice. `digest`
    # hashes what was read, to tell a conversation that changed at the source.
    # Deleting the conversation forgets that it was imported.
    await run_script(
        conn,
        """
        CREATE TABLE imports (
            source          TEXT NOT NULL,
            source_id       TEXT NOT NULL,
            conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            digest          TEXT NOT NULL,
            imported_at     REAL NOT NULL,
            PRIMARY KEY (source, source_id)
        );
        CREATE INDEX imports_conversation ON imports(conversation_id);
        """,
    )


async def m014_summaries_indexed_alone(conn: aiosqlite.Connection) -> None:
    # A compaction record is recalled by its model-written summary alone
    # (newt.memory.compaction.recall_text): the owed part, from its count line
    # on, quotes the user's removed messages, which are records of their own.
    # The update trigger re-indexes the text and drops its vectors.
    await run_script(
        conn,
        """
        UPDATE memory_records SET content = rtrim(
                substr(content, 1, instr(content, 'No summary written yet: ') - 1),
                char(10, 13, 32))
            WHERE source = 'compaction' AND instr(content, 'No summary written yet: ') > 0;
        UPDATE memory_records SET content = rtrim(
                substr(content, 1, instr(content, 'Summary generation was unavailable. ') - 1),
                char(10, 13, 32))
            WHERE source = 'compaction'
              AND instr(content, 'Summary generation was unavailable. ') > 0;
        """,
    )


async def m015_stopped_for_length(conn: aiosqlite.Connection) -> None:
    # Whether the backend stopped the reply at its length cap (finish_reason
    # "length"): the reply's footer says "stopped at the length limit", and a
    # resumed conversation's footer said nothing.
    await run_script(
        conn, "ALTER TABLE turns ADD COLUMN stopped_for_length INTEGER NOT NULL DEFAULT 0;"
    )


MIGRATIONS: list[tuple[int, str, Migration]] = [
    (1, "initial", m001_initial),
    (2, "memory_records", m002_memory_records),
    (3, "model_capabilities", m003_model_capabilities),
    (4, "estimate_glue", m004_estimate_glue),
    (5, "stemmed_index", m005_stemmed_index),
    (6, "memory_vectors", m006_memory_vectors),
    (7, "reply_details", m007_reply_details),
    (8, "conversation_settings", m008_conversation_settings),
    (9, "edits_forks_attachments", m009_edits_forks_attachments),
    (10, "records_with_shape", m010_records_with_shape),
    (11, "said_at_index", m011_said_at_index),
    (12, "memory_ownership", m012_memory_ownership),
    (13, "imports", m013_imports),
    (14, "summaries_indexed_alone", m014_summaries_indexed_alone),
    (15, "stopped_for_length", m015_stopped_for_length),
]

SCHEMA_VERSION = MIGRATIONS[-1][0]
