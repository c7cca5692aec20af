"""A stdio MCP server (the official Python SDK) with one tool, `book_table`, that asks the
user a form through elicitation and answers with what it got: the end-to-end tests use it to
fill in a server's form at wonopcode's terminal."""
from pydantic import BaseModel, Field

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("ask")


class Booking(BaseModel):
    name: str = Field(description="Your name")
    guests: int = Field(default=2, description="How many people")
    terrace: bool = Field(default=False, description="Outside?")


@server.tool()
async def book_table(day: str, ctx: Context) -> str:
    """Books a table for DAY, asking who and how many."""
    answer = await ctx.elicit(f"Booking for {day}", schema=Booking)
    if answer.action != "accept":
        return f"no booking ({answer.action})"
    b = answer.data
    return f"booked {day} for {b.name}, {b.guests} people, terrace={b.terrace}"


if __name__ == "__main__":
    server.run()
