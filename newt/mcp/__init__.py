"""Tools from MCP servers.

`newt.mcp.config` parses `[mcp.servers.NAME]` and imports nothing heavy; the
SDK is imported only by `newt.mcp.manager` and what it loads (`server`,
`transport`), so a config without servers costs nothing at startup. No
textual here.
"""
