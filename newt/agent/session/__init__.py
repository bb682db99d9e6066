"""The session and its parts: one conversation at a time, under one lock."""
