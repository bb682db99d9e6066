"""Where newt's files are: the config file and the database (see newt.config).

`$NEWT_HOME` holds both when set; else the XDG config and data directories.
A config file named on the command line or by `$NEWT_CONFIG` wins.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "newt"


def home_dir() -> Path | None:
    home = os.environ.get("NEWT_HOME")
    return Path(home).expanduser() if home else None


def default_config_path() -> Path:
    home = home_dir()
    if home:
        return home / "config.toml"
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def default_db_path() -> Path:
    home = home_dir()
    if home:
        return home / "newt.db"
    return Path(platformdirs.user_data_dir(APP_NAME)) / "newt.db"


def resolve_config_path(cli_path: str | os.PathLike[str] | None = None) -> Path:
    if cli_path:
        return Path(cli_path).expanduser()
    env = os.environ.get("NEWT_CONFIG")
    if env:
        return Path(env).expanduser()
    return default_config_path()
