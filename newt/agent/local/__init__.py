"""Local models as the front ends use them: first run, the catalogue, the managed server."""
