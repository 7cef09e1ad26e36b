"""The MCP server (``memwell mcp``): stdio and HTTP transports over the agent tools."""
