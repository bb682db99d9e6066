"""What the tests share: fakes, drivers, fixtures and helpers, each module named
by what it is. Nothing here is a test, and no test module imports another test
module: a helper two tests need lives here (tests/unit/project/test_test_layout.py
checks both, and that tmux is driven from tests/support/tmux.py alone)."""
