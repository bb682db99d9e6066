"""The `home` fixture of the UI tests (tests/support/homes.py): a NEWT_HOME of the
test's own, and the working directory in tmp_path."""

from tests.support.homes import home  # noqa: F401  (fixture)
