"""newt's configuration: typed, read once, written back with tomlkit.

Precedence, lowest to highest: defaults < config file < environment
(`OPENAI_BASE_URL`, `OPENAI_API_KEY` or the variable named by
`[backend] api_key_env`) < command line.

The config file is `--config PATH`, else `$NEWT_CONFIG`, else
`$NEWT_HOME/config.toml`, else `config.toml` in the XDG config directory.
The database is `$NEWT_HOME/newt.db`, else `newt.db` in the XDG data directory.

The API key itself is never stored in the file or the database: the file
names the environment variable that holds it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from newt.chat_settings import Preset, SettingsError, parse_presets
from newt.config_paths import default_db_path, resolve_config_path
from newt.errors import InputError
from newt.files import ensure_private_dir, write_private
from newt.mcp.config import McpConfig, McpConfigError, parse_mcp_section
from newt.resources import asset_text

MEMORY_PROVIDERS = ("token_budget", "rolling_window")
# memory.threshold_pct: below 10% the window holds almost nothing but the newest
# turn; above 99% no room is left for the estimate's error.
THRESHOLD_RANGE = (0.10, 0.99)
# memory.fold_to: 1.00 folds just enough each turn (the request changes every turn).
FOLD_TO_RANGE = (0.10, 1.00)
# Keys earlier versions knew, still accepted so an old config file keeps
# working: the lookup shortcut and the capsule orders they set are gone.
RETIRED_KEYS = frozenset(
    {"recall.evidence_order", "recall.focus_questions", "recall.focus_temperature"}
)


class ConfigError(InputError):
    """A config problem the user must fix; the message names file, line and key."""


@dataclass
class BackendConfig:
    base_url: str = ""
    """OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (env OPENAI_BASE_URL)."""
    model: str = ""
    """Model name sent with every request."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the API key (the key never goes in the file)."""
    timeout_s: float = 60.0
    """Read timeout: the longest allowed silence between streamed chunks, in seconds."""
    max_retries: int = 2
    """Retries for 408/409/429/5xx and connection failures, with exponential backoff."""
    local: bool = False
    """Run newt's own llama-server, as `newt --local` does (the first run's "Run a local
    model" sets it); wins over base_url from this file, not over --base-url or the env."""
    local_model: str = ""
    """The model that server runs: a catalogue name, a GGUF path, or empty for SmolLM2
    (the first run's choice, `newt --local NAME` and /model set it)."""
    local_keep_alive: float = 300.0
    """Seconds newt's own llama-server stays up after the last newt using it exits, for
    the next one to find it loaded (0: it stops with newt; env NEWT_LOCAL_KEEP_ALIVE)."""
    tools: str = "auto"
    """Whether the model is offered tools (memory's and MCP servers'): "auto" decides per
    model from what it does (a probe for models newt runs, then its turns); "on", "off"."""


@dataclass
class MemoryConfig:
    provider: str = "token_budget"
    """Memory provider: "token_budget" (default) or "rolling_window"."""
    context_tokens: int | None = None
    """Explicit context window in tokens; wins over what the backend declares."""
    threshold_pct: float = 0.80
    """Fraction of the context window the conversation may fill, 0.10-0.99 (0.80: 80%)."""
    fold_to: float = 0.60
    """Share of that fill a fold leaves, 0.10-1.00: the turns after it append to an
    unchanged request, which a server's prompt cache reads only once."""


@dataclass
class EstimationConfig:
    chars_per_token: int = 4
    """Characters per token used to estimate text the backend has not measured yet."""


@dataclass
class RecallConfig:
    retained_token_budget: int = 4096
    """Most tokens of retained evidence capsules in one request (0 turns recall off); the
    budget in force is a share of the context window below this cap."""
    excerpt_tokens: int = 120
    """A recalled record up to this many estimated tokens goes whole; a longer one is cut
    to a verbatim excerpt of this size around the question's words."""
    embeddings: str = "auto"
    """"auto": recall by meaning too, all-MiniLM-L6-v2 in process (or `embeddings_url` when
    set); "server": the /v1/embeddings of `embeddings_url` or the chat backend; "off": words."""
    embedding_model: str = ""
    """Model name sent to /v1/embeddings; empty: the chat model."""
    embeddings_url: str = ""
    """Base URL of a separate OpenAI-compatible embeddings server; empty: the chat backend."""


@dataclass
class UIConfig:
    theme: str = "textual-dark"
    """Textual theme name."""


@dataclass
class Config:
    backend: BackendConfig = field(default_factory=BackendConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    estimation: EstimationConfig = field(default_factory=EstimationConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)
    ui: UIConfig = field(default_factory=UIConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    """[mcp.servers.NAME] tables, parsed by newt/mcp/config.py."""
    presets: dict[str, Preset] = field(default_factory=dict)
    """[presets.NAME] tables, parsed by newt/chat_settings.py."""
    path: Path | None = None
    """The config file this came from (it may not exist yet)."""
    db_path: Path | None = None
    api_key: str | None = field(default=None, repr=False)
    """Read from the environment at load time; never written anywhere."""
    embedding_space: str = ""
    """A fixed name for the embedding space of this run's vectors (`newt --local`:
    its embeddings server's port changes every run); empty: URL and model name it."""
    server_context_tokens: int | None = None
    """The window of the llama-server newt runs itself (`--local`, `[backend] local`):
    known before any probe, so the very first figures are budgeted for it."""
    server_reply_cap: int | None = None
    """That server's own reply cap (its `-n`): the cap in force when a conversation
    sets none, which /settings shows."""
    server_sampling: dict[str, float] = field(default_factory=dict)
    """That server's default sampling by name ("temperature", "top_p", ...: the
    model's published values, newt/local/models/sampling.py); /settings shows it."""

    def __repr__(self) -> str:  # keep the key out of any accidental log line
        return f"Config(path={self.path}, backend={self.backend}, memory={self.memory})"


# table name in the file -> attribute of Config
_SECTIONS: dict[str, str] = {
    "backend": "backend",
    "memory": "memory",
    "context.estimation": "estimation",
    "recall": "recall",
    "ui": "ui",
}


def _line_of(text: str, dotted: str) -> int | None:
    """Best-effort line number of `key` under its table, for error messages."""
    table, _, key = dotted.rpartition(".")
    in_table = table == ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("["):
            in_table = line.strip("[] ") == table
            continue
        if in_table and line.split("=", 1)[0].strip().strip('"') == key:
            return number
    return None


def _coerce(value: Any, default: Any, annotation: str, where: str) -> Any:
    optional = "None" in annotation
    if value is None and optional:
        return None
    if "float" in annotation:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where} must be a number, not {value!r}")
        return float(value)
    if "int" in annotation:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be a whole number, not {value!r}")
        return int(value)
    if "str" in annotation:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, not {value!r}")
        return str(value)
    return value


def _apply_file(cfg: Config, path: Path) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:  # a TOML file is UTF-8: say where it is not
        raw = path.read_bytes()[: exc.start]
        row, col = raw.count(b"\n") + 1, exc.start - (raw.rfind(b"\n") + 1) + 1
        raise ConfigError(
            f"{path}, line {row}, column {col}: the config file is not UTF-8 text "
            f"(byte 0x{exc.object[exc.start]:02x}). Save it as UTF-8 or remove it."
        ) from None
    try:
        doc = tomlkit.parse(text).unwrap()
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(
            f"{path}, line {exc.line}, column {exc.col}: this is not valid TOML "
            f"({str(exc).split(' at line')[0]}). Fix the line or remove the file."
        ) from exc
    flat: dict[str, Any] = {}
    for top, value in doc.items():
        if top == "context" and isinstance(value, dict):
            for sub, inner in value.items():
                flat[f"context.{sub}"] = inner
        else:
            flat[top] = value
    for table, body in flat.items():
        if table == "mcp":  # named server tables: their own parser (newt/mcp/config.py)
            cfg.mcp = _mcp_section(body, path, text)
            continue
        if table == "presets":  # named tables of per-conversation settings
            try:
                cfg.presets = parse_presets(body, _where(path, text))
            except SettingsError as exc:
                raise ConfigError(str(exc)) from exc
            continue
        if table not in _SECTIONS:
            raise ConfigError(
                f"{path}: unknown section [{table}]; known sections are "
                + ", ".join(f"[{s}]" for s in (*_SECTIONS, "mcp", "presets"))
            )
        if not isinstance(body, dict):
            raise ConfigError(f"{path}: [{table}] must be a table")
        section = getattr(cfg, _SECTIONS[table])
        known = {f.name: f for f in fields(section)}
        for key, value in body.items():
            dotted = f"{table}.{key}"
            line = _line_of(text, dotted)
            where = f"{path}" + (f", line {line}" if line else "") + f": {dotted}"
            if dotted in RETIRED_KEYS:
                continue  # a setting of an earlier version: accepted, no longer used
            if key not in known:
                raise ConfigError(
                    f"{where} is not a known key; known keys in [{table}]: " + ", ".join(known)
                )
            f = known[key]
            setattr(section, key, _coerce(value, f.default, str(f.type), where))
        if table == "memory" and cfg.memory.provider not in MEMORY_PROVIDERS:
            line = _line_of(text, "memory.provider")
            raise ConfigError(
                f"{path}" + (f", line {line}" if line else "") + ": memory.provider "
                f"{cfg.memory.provider!r} is unknown; use one of: " + ", ".join(MEMORY_PROVIDERS)
            )


def _where(path: Path, text: str) -> Any:
    """`dotted` -> "FILE, line N: dotted", for the named-table parsers."""

    def where(dotted: str) -> str:
        line = _line_of(text, dotted)
        if line is None:  # a table itself: find its header
            header = f"[{dotted}]"
            line = next(
                (n for n, raw in enumerate(text.splitlines(), 1) if raw.strip() == header), None
            )
        return f"{path}" + (f", line {line}" if line else "") + f": {dotted}"

    return where


def _mcp_section(body: Any, path: Path, text: str) -> McpConfig:
    try:
        return parse_mcp_section(body, _where(path, text))
    except McpConfigError as exc:
        raise ConfigError(str(exc)) from exc


def _validate(cfg: Config, origin: str) -> None:
    if cfg.memory.context_tokens is not None and cfg.memory.context_tokens <= 0:
        raise ConfigError(f"{origin}: memory.context_tokens must be positive")
    for key, (low, high), example in (
        ("threshold_pct", THRESHOLD_RANGE, "0.80 fills 80% of the window"),
        ("fold_to", FOLD_TO_RANGE, "0.60 leaves 60% of that fill after a fold"),
    ):
        value = getattr(cfg.memory, key)
        if not low <= value <= high:
            # a share, not a percentage: 5 would have been clamped
            raise ConfigError(
                f"{origin}: memory.{key} must be a fraction from {low:.2f} to {high:.2f} "
                f"({example}), not {value:g}"
            )
    if cfg.backend.local_keep_alive < 0:
        raise ConfigError(f"{origin}: backend.local_keep_alive must be seconds, 0 or more")
    if cfg.backend.max_retries < 0:
        raise ConfigError(f"{origin}: backend.max_retries must be 0 or more")
    if cfg.backend.timeout_s <= 0:
        raise ConfigError(f"{origin}: backend.timeout_s must be positive")
    if cfg.estimation.chars_per_token < 1:
        raise ConfigError(f"{origin}: context.estimation.chars_per_token must be at least 1")
    if cfg.recall.retained_token_budget < 0 or cfg.recall.excerpt_tokens < 1:
        raise ConfigError(f"{origin}: recall budgets must be positive")
    if cfg.backend.tools not in ("auto", "on", "off"):
        raise ConfigError(f'{origin}: backend.tools must be "auto", "on" or "off"')
    if cfg.recall.embeddings not in ("auto", "server", "off"):
        raise ConfigError(f'{origin}: recall.embeddings must be "auto", "server" or "off"')


def load_config(
    cli_path: str | os.PathLike[str] | None = None,
    *,
    base_url: str | None = None,
    model: str | None = None,
    env: dict[str, str] | None = None,
) -> Config:
    """Build the effective Config; raises ConfigError with a user-facing message."""
    environ = os.environ if env is None else env
    path = resolve_config_path(cli_path)
    if cli_path and not path.exists():
        raise ConfigError(f"{path}: config file not found (given with --config)")
    cfg = Config(path=path, db_path=default_db_path())
    _apply_file(cfg, path)
    _validate(cfg, str(path))
    if environ.get("OPENAI_BASE_URL"):
        cfg.backend.base_url = environ["OPENAI_BASE_URL"]
    if environ.get("NEWT_LOCAL_KEEP_ALIVE"):
        cfg.backend.local_keep_alive = _keep_alive(environ["NEWT_LOCAL_KEEP_ALIVE"])
    if base_url:
        cfg.backend.base_url = base_url
    if model:
        cfg.backend.model = model
    cfg.backend.base_url = cfg.backend.base_url.rstrip("/")
    if cfg.backend.base_url and not cfg.backend.base_url.startswith(("http://", "https://")):
        raise ConfigError(
            f"backend.base_url {cfg.backend.base_url!r} is not an http(s) URL "
            "(e.g. http://127.0.0.1:8080/v1)"
        )
    cfg.recall.embeddings_url = cfg.recall.embeddings_url.strip().rstrip("/")
    if cfg.recall.embeddings_url and not cfg.recall.embeddings_url.startswith(
        ("http://", "https://")
    ):
        raise ConfigError(
            f"{path}: recall.embeddings_url {cfg.recall.embeddings_url!r} is not an http(s) "
            "URL (e.g. http://127.0.0.1:8081/v1)"
        )
    # only the variable the config names: never send an OpenAI key to another server
    cfg.api_key = environ.get(cfg.backend.api_key_env) or None
    return cfg


def _keep_alive(raw: str) -> float:
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if seconds < 0:
        raise ConfigError(f"NEWT_LOCAL_KEEP_ALIVE must be seconds (0 or more), not {raw!r}")
    return seconds


def default_config_text() -> str:
    """The annotated default config (assets/config.toml)."""
    return asset_text("config.toml")


def save_local_choice(path: Path, model: str = "", about: str = "") -> None:
    """Remember a local model chosen (first run, `newt --local NAME`, /model) as
    `[backend] local = true` and `local_model = model` ("" is SmolLM2), commented,
    so every later newt (TUI, -c, -p) starts the same one instead of asking again."""
    item, chosen = tomlkit.item(True), tomlkit.item(model)
    item.comment("newt runs its own llama-server, as `newt --local` (false: use base_url)")
    chosen.comment(about or ("SmolLM2-135M-Instruct" if not model else "newt --local --list"))
    save_settings(path, {"backend": {"local": item, "local_model": chosen}})


def save_settings(path: Path, updates: dict[str, dict[str, Any]]) -> None:
    """Set keys (e.g. {"backend": {"model": "x"}}) keeping comments, order and quoting.

    A missing file starts from the annotated template so new users get the docs too.
    """
    text = path.read_text(encoding="utf-8") if path.exists() else default_config_text()
    doc = tomlkit.parse(text)
    for table, values in updates.items():
        container: Any = doc
        for part in table.split("."):
            if part not in container:
                container[part] = tomlkit.table()
            container = container[part]
        for key, value in values.items():
            if "api_key" in key and key != "api_key_env":
                raise ValueError("API keys are never written to the config file")
            container[key] = value
    # private by default (0700 directory, 0600 file); an existing file keeps its mode
    ensure_private_dir(path.parent)
    write_private(path, tomlkit.dumps(doc))
