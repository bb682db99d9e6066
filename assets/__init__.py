"""Texts shipped with newt: prompts and the default config template."""
