"""[mcp.servers.NAME]: parsed into typed settings; mistakes name file, line, server and key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from newt.cli.main import main
from newt.config import ConfigError, default_config_text, load_config


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_stdio_and_http_servers_parse(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
[mcp.servers.files]
command = "mcp-server-filesystem"
args = ["/tmp"]
env = { LOG_LEVEL = "warning" }

[mcp.servers.web-search]
url = "http://127.0.0.1:8931/mcp"
headers = { Authorization = "Bearer s3cret" }
approve = "always"
enabled = false
""",
    )
    servers = load_config(path).mcp.servers
    files, web = servers["files"], servers["web-search"]
    assert (files.transport, files.command, files.args) == (
        "stdio",
        "mcp-server-filesystem",
        ["/tmp"],
    )
    assert files.env == {"LOG_LEVEL": "warning"}
    assert (files.approve, files.enabled) == ("ask", True)  # the defaults
    assert (web.transport, web.url, web.approve, web.enabled) == (
        "http",
        "http://127.0.0.1:8931/mcp",
        "always",
        False,
    )
    assert web.headers == {"Authorization": "Bearer s3cret"}
    assert "s3cret" not in repr(web)  # headers carry credentials: never in a log line


def test_no_section_means_no_servers(tmp_path: Path) -> None:
    assert load_config(_write(tmp_path, "[ui]\ntheme = 'nord'\n")).mcp.servers == {}


def test_the_template_documents_mcp_without_enabling_any_server(tmp_path: Path) -> None:
    text = default_config_text()
    assert "[mcp.servers." in text
    assert load_config(_write(tmp_path, text)).mcp.servers == {}
    uncommented = "\n".join(
        line[2:]
        if line.startswith("# ") and ("=" in line or line.startswith(("# [mcp", "# [presets")))
        else line
        for line in text.splitlines()
        if "context_tokens" not in line
    )
    servers = load_config(_write(tmp_path, uncommented)).mcp.servers
    assert servers, "the commented example must be a valid config once uncommented"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[mcp.servers.fs]\ncommand = "x"\napprove = "sometimes"\n',
            ["line 3", "mcp.servers.fs.approve", "'fs'", "ask, always, never"],
        ),
        (
            '[mcp.servers.fs]\ncommand = "x"\nargs = "/tmp"\n',
            ["line 3", "mcp.servers.fs.args", "list of strings"],
        ),
        (
            '[mcp.servers.fs]\ncommand = "x"\ncwd = "/tmp"\n',
            ["line 3", "mcp.servers.fs.cwd", "not a known key", "'fs'"],
        ),
        ('[mcp.servers.fs]\nargs = ["a"]\n', ["line 1", "'fs'", "either command", "neither"]),
        ('[mcp.servers.fs]\ncommand = "x"\nurl = "http://h/mcp"\n', ["'fs'", "both"]),
        ('[mcp.servers.web]\nurl = "ftp://h/mcp"\n', ["line 2", "mcp.servers.web.url", "http(s)"]),
        (
            '[mcp.servers.web]\nurl = "http://h/mcp"\nenv = { A = "b" }\n',
            ["line 3", "mcp.servers.web.env", "stdio"],
        ),
        (
            '[mcp.servers.fs]\ncommand = "x"\nheaders = { A = "b" }\n',
            ["line 3", "mcp.servers.fs.headers", "HTTP"],
        ),
        (
            '[mcp.servers.fs]\ncommand = "x"\nenv = { A = 1 }\n',
            ["line 3", "mcp.servers.fs.env", "table of strings"],
        ),
        (
            '[mcp.servers.fs]\ncommand = "x"\nenabled = "yes"\n',
            ["line 3", "mcp.servers.fs.enabled", "true or false"],
        ),
        ('[mcp.servers."my files"]\ncommand = "x"\n', ["'my files'", "letters, digits"]),
        ('[mcp.servers.a__b]\ncommand = "x"\n', ["'a__b'", "single '_'"]),
        ("[mcp]\nserver = {}\n", ["line 2", "mcp.server", "not a known key"]),
    ],
)
def test_mistakes_name_file_line_server_and_key(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    for part in expected:
        assert part in message, (part, message)


def test_a_bad_mcp_section_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, '[mcp.servers.fs]\ncommand = "x"\napprove = "maybe"\n')
    code = main(["--config", str(path), "-p", "hello", "--base-url", "http://127.0.0.1:9/v1"])
    assert code == 2
    assert "mcp.servers.fs.approve" in capsys.readouterr().err


def test_config_does_not_load_the_sdk_and_the_manager_no_textual() -> None:
    # the SDK takes about a second to import: only a config with servers pays it
    code = (
        "import sys, newt.config, newt.cli.main, newt.agent.tools.mcp\n"
        "import newt.agent.session.chat_session\n"
        "assert 'mcp' not in sys.modules and 'newt.mcp.manager' not in sys.modules\n"
        "import newt.mcp.manager\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'textual']\n"
        "print('clean')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "clean"
