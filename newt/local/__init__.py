"""Local models on this machine: getting them (setup/, models/) and running them (server.py)."""
