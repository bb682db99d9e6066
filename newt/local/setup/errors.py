"""What the local setup raises: one error whose message is written for the user.

Not under `newt.errors.NewtError`: this package also runs as a standalone
script before newt is installed, so it imports nothing of newt.
"""

from __future__ import annotations


class SetupError(Exception):
    """Something the local setup could not do; the message says what and how to fix it."""


class SetupCancelled(SetupError):
    """Raised by a progress callback to stop the setup (nothing half-done is kept)."""
