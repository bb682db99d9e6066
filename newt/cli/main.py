"""The `newt` command: argument parsing, subcommands, print mode, the TUI entry.

Every user-facing failure ends in one line on stderr and exit status 2 (bad
input or config) or 1 (the backend failed); never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from typing import TYPE_CHECKING, TextIO

from newt import __version__
from newt.cli.memory import add_parsers as add_memory_parsers
from newt.cli.memory import run_command as run_memory_command
from newt.config import Config, load_config
from newt.errors import InputError, NewtError, describe, user_message
from newt.store import Store

if TYPE_CHECKING:
    from newt.agent.local.managed_server import ManagedLocal

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(InputError):
    """Bad input on the command line: one line on stderr, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="newt",
        description="A terminal chat with an LLM whose memory stays inside the context window.",
        epilog="Commands: `newt list`, `newt export ID [--format md|json]`, "
        "`newt rename ID TITLE`, `newt delete ID`, `newt memory search|show|forget`, "
        "`newt import PATH [--from elia|oterm|llm]`. "
        "With no command, newt opens the chat TUI.",
    )
    parser.add_argument("--version", action="version", version=f"newt {__version__}")
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="config file (default: $NEWT_CONFIG, $NEWT_HOME/config.toml or the XDG config dir)",
    )
    parser.add_argument("--base-url", metavar="URL", help="OpenAI-compatible endpoint")
    parser.add_argument("--model", metavar="NAME", help="model name")
    parser.add_argument(
        "--preset",
        metavar="NAME",
        help="use a [presets.NAME] table of the config (system prompt, parameters, model)",
    )
    parser.add_argument(
        "--local",
        nargs="?",
        const="",
        metavar="NAME|MODEL.gguf",
        help="run a managed llama-server with a GGUF file, a catalogue model or one found"
        " on this machine (default: SmolLM2-135M-Instruct); --local --list shows them",
    )
    parser.add_argument(
        "--stop",
        action="store_true",
        help="with --local: stop the llama-server newt keeps warm after it exits",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="with --local: the chat models found here and the catalogue, with a recommendation",
    )
    parser.add_argument(
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="resume the latest conversation",
    )
    parser.add_argument(
        "-r", "--resume", metavar="ID", help="resume a conversation (unique id prefix)"
    )
    parser.add_argument(
        "-p",
        "--print",
        dest="prompt",
        metavar="TEXT",
        help="one-shot: stream the reply to stdout ('-' reads stdin)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="with -p: print one JSON object instead of the streamed text",
    )
    parser.add_argument(
        "--show-thinking",
        action="store_true",
        help="with -p: print the model's reasoning too (before the reply, in <think> tags;"
        " with --json under a 'thinking' key)",
    )
    parser.add_argument(
        "--incognito",
        action="store_true",
        help="keep this conversation out of memory (the TUI or -p; with -c/-r what"
        " was indexed of it goes)",
    )
    # started detached by print mode to write a compaction summary after it exits
    parser.add_argument("--finish-summary", metavar="ID", help=argparse.SUPPRESS)
    # with it, the chat request's start for the summary request, on stdin
    parser.add_argument("--head-on-stdin", action="store_true", help=argparse.SUPPRESS)
    # started detached by print mode to embed records still without a vector
    parser.add_argument("--catch-up-vectors", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("list", help="list saved conversations")
    export = sub.add_parser("export", help="export a conversation")
    export.add_argument("id", metavar="ID", help="conversation id (unique prefix)")
    export.add_argument("--format", choices=("md", "json"), default="md")
    add_memory_parsers(sub)  # rename, delete, memory (newt/cli/memory.py)
    # listed for --help; `newt import` is parsed by its own parser (newt/cli/import_command.py)
    sub.add_parser(
        "import", help="bring in conversations from ChatGPT, Claude, Elia, oterm, llm or JSON"
    )
    return parser


def _err(stream: TextIO, message: str) -> None:
    stream.write(f"newt: error: {message}\n")
    stream.flush()


async def cmd_list(config: Config, out: TextIO) -> int:
    assert config.db_path is not None
    async with await Store.open(config.db_path) as store:
        conversations = await store.conversations.list()
    if not conversations:
        out.write("no conversations yet\n")
        return EXIT_OK
    from newt.agent.session.export import format_listing

    out.write(format_listing(conversations))
    return EXIT_OK


async def cmd_export(config: Config, conv_id: str, fmt: str, out: TextIO) -> int:
    from newt.agent.session.chat_session import resolve_conversation
    from newt.agent.session.export import export_conversation

    assert config.db_path is not None
    async with await Store.open(config.db_path) as store:
        conv = await resolve_conversation(store, conv_id)
        out.write(await export_conversation(store, conv, fmt))
    return EXIT_OK


def _start_local_embeddings(stack: ExitStack, config: Config, stderr: TextIO) -> None:
    """`newt --local`: MiniLM beside the chat model for recall by meaning, when its
    GGUF is cached; stopped with newt like the chat server. If it does not start,
    newt says so and recalls by words."""
    from newt.agent.local.first_run import local_embeddings_server, use_local_embeddings
    from newt.backend.errors import LocalServerError

    server = local_embeddings_server(config)
    if server is None:
        return
    try:
        stack.enter_context(server)
    except LocalServerError as exc:
        first_line = str(exc).splitlines()[0]
        stderr.write(f"newt: the embeddings model did not start, recall by words: {first_line}\n")
        return
    use_local_embeddings(config, server)


def _local_model(args: argparse.Namespace, config: Config) -> str | None:
    """The model newt runs itself: `--local [MODEL]`, else `[backend] local = true`
    (the first run's choice) for the chat and -p, unless --base-url or
    OPENAI_BASE_URL name a server; a bare `--local` and `local = true` run the
    remembered `local_model`; "" is the default model, None no local model."""
    if args.local:
        return str(args.local)
    remembered = config.backend.local_model.strip()
    if args.local is not None:
        return remembered
    chatting = args.command is None and not args.finish_summary and not args.catch_up_vectors
    named = bool(args.base_url or os.environ.get("OPENAI_BASE_URL"))
    return remembered if config.backend.local and chatting and not named else None


def _resolve_local(args: argparse.Namespace, config: Config, local: str, stderr: TextIO) -> str:
    """The GGUF file for `local`. `newt --local NAME` opening the chat is remembered
    (later plain runs use it); a remembered model that is gone falls back to
    SmolLM2 with a warning, so the chat still opens."""
    from newt.local.models.cli import LocalModelError, remembered_as, resolve_local

    if not args.local:
        try:
            return str(resolve_local(local, stderr=stderr))
        except LocalModelError as exc:
            stderr.write(
                f"newt: the remembered local model did not load ({describe(exc)}); running "
                "SmolLM2-135M-Instruct. `newt --local NAME` picks another.\n"
            )
            return ""
    path = resolve_local(local, stderr=stderr)
    if args.prompt is None and args.command is None and not args.finish_summary:
        from newt.config import save_local_choice
        from newt.config_paths import default_config_path

        try:
            save_local_choice(config.path or default_config_path(), *remembered_as(local, path))
        except (OSError, ValueError) as exc:
            stderr.write(f"newt: the choice was not saved to the config file: {exc}\n")
    return str(path)


def _start_local(
    stack: ExitStack, config: Config, path: str, *, explicit_model: str | None
) -> ManagedLocal:
    """Start the managed llama-server (or attach to the warm one: newt.local.warm;
    given up when newt exits) and point `config` at it:
    the default SmolLM2 with its small window, a chosen model with `window_for` it.
    The owner it returns lets the TUI's /model run another model in its place."""
    from pathlib import Path

    from newt.agent.local.managed_server import ManagedLocal, managed_server

    server = managed_server(
        Path(path) if path else None, keep_alive_s=config.backend.local_keep_alive
    )
    stack.enter_context(server)
    owner = ManagedLocal(server, config, model=explicit_model)
    stack.callback(owner.stop)  # whichever model runs by then
    return owner


def _read_prompt(args: argparse.Namespace, stdin: TextIO) -> str:
    text: str = args.prompt
    if text == "-":
        text = stdin.read()
    if not text.strip():
        raise UsageError("the prompt is empty; give text after -p or pipe it with -p -")
    return text


def _choose_preset(config: Config, name: str, *, explicit_model: bool) -> None:
    """`--preset NAME`: it must exist; its model wins over the config's, not over --model."""
    from newt.chat_settings import unknown_preset_message

    preset = config.presets.get(name)
    if preset is None:
        raise UsageError(unknown_preset_message(name, config.presets))
    if preset.model and not explicit_model:
        config.backend.model = preset.model


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["import"]:  # its own parser: newt/cli/import_command.py
        from newt.cli.import_command import import_main

        return import_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    stdout, stderr = sys.stdout, sys.stderr
    if args.stop:
        if args.local is None or args.local:
            _err(stderr, "--stop goes with --local: `newt --local --stop`")
            return EXIT_USAGE
        from newt.local.warm import stop_servers

        stopped = stop_servers()
        said = f"stopped {stopped} warm llama-server(s)" if stopped else "no warm llama-server"
        print(said, file=stdout)
        return 0
    if args.list:
        if args.local is None or args.local:
            _err(stderr, "--list goes with --local: `newt --local --list`")
            return EXIT_USAGE
        from newt.local.models.cli import list_main

        return list_main(stdout)
    if args.json and args.prompt is None:
        _err(stderr, "--json only works with -p/--print")
        return EXIT_USAGE
    if args.show_thinking and args.prompt is None:
        _err(stderr, "--show-thinking only works with -p/--print")
        return EXIT_USAGE
    if args.continue_latest and args.resume:
        _err(stderr, "use either -c/--continue or -r/--resume, not both")
        return EXIT_USAGE
    if args.incognito and args.command is not None:
        _err(stderr, "--incognito is for a chat: the TUI or -p/--print")
        return EXIT_USAGE
    with ExitStack() as stack:
        try:
            config = load_config(args.config, base_url=args.base_url, model=args.model)
            local = _local_model(args, config)
            if local:  # a catalogue name or a discovered model becomes its file
                local = _resolve_local(args, config, local, stderr)
            owner = None
            if local is not None:
                owner = _start_local(stack, config, local, explicit_model=args.model)
            if args.preset:
                explicit = bool(args.model) or local is not None
                _choose_preset(config, args.preset, explicit_model=explicit)
            if local is not None:
                _start_local_embeddings(stack, config, stderr)
            if args.finish_summary:
                from newt.agent.session.summary_request import read_head
                from newt.cli.bounded_exit import run_bounded
                from newt.cli.detached_writers import finish_summary

                head = read_head(sys.stdin.buffer) if args.head_on_stdin else None
                return run_bounded(finish_summary(config, args.finish_summary, head))
            if args.catch_up_vectors:
                from newt.cli.bounded_exit import run_bounded
                from newt.cli.catch_up import catch_up_vectors

                return run_bounded(catch_up_vectors(config))
            if args.command == "list":
                return asyncio.run(cmd_list(config, stdout))
            if args.command == "export":
                return asyncio.run(cmd_export(config, args.id, args.format, stdout))
            status = run_memory_command(args, config, stdout, stderr, sys.stdin)
            if status is not None:
                return status
            if args.prompt is not None:
                from newt.cli.bounded_exit import run_bounded
                from newt.cli.print_mode import run_print

                prompt = _read_prompt(args, sys.stdin)
                # bounded: background work left running never holds up the exit
                return run_bounded(
                    run_print(
                        config,
                        prompt,
                        as_json=args.json,
                        show_thinking=args.show_thinking,
                        resume=args.resume,
                        continue_latest=args.continue_latest,
                        out=stdout,
                        err=stderr,
                        # our managed llama-server stops when we exit: wait instead
                        detach_summary=local is None,
                        preset=args.preset,
                        incognito=args.incognito,
                    )
                )
            from newt.ui.app import run_tui
            from newt.ui.open_request import OpenRequest

            opening = OpenRequest(
                resume=args.resume,
                continue_latest=args.continue_latest,
                preset=args.preset,
                incognito=args.incognito,  # kept out of memory from before the first turn
            )
            return run_tui(config, opening=opening, local=owner)
        except NewtError as exc:  # one mapping: message and exit status (newt.errors)
            text, status = user_message(exc) or (str(exc), EXIT_FAILED)
            _err(stderr, text)
            return status
        except KeyboardInterrupt:
            stderr.write("\n")
            return 130
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
