"""A stdio MCP server (the official Python SDK) whose tool list changes: `unlock` adds the
tool `secret` and says so (`notifications/tools/list_changed`). The end-to-end tests use it to
see a run take a server's new tools between responses."""
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("grow")


def secret() -> str:
    """Tells the secret (there once `unlock` ran)."""
    return "the secret is 42"


@server.tool()
async def unlock(ctx: Context) -> str:
    """Adds the tool `secret`."""
    server.add_tool(secret)
    # The 2025-11-25 notification (MCPServer.notify_tools_changed publishes to 2026 subscribers).
    await ctx.session.send_tool_list_changed()
    return "unlocked"


if __name__ == "__main__":
    server.run()
