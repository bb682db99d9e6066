"""Screens of newt's TUI; each has a .tcss file beside it."""
