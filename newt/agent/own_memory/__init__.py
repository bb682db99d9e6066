"""The user's own memory as the session serves it: search, notes, forgetting, status."""
