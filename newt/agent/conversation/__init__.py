"""The conversation the session holds, as it is kept: its durable log, and
where it lives (the database, or memory when incognito)."""
