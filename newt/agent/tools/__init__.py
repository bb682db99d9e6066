"""The tools a turn offers the model: built-in, MCP, their approval and text-written calls."""
