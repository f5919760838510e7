"""An MCP server someone else wrote, in the style of the official SDK's own examples (mcp 2's
``MCPServer``, FastMCP's new name): one tool taking one string, served over streamable HTTP.
Nothing of Gaia Mesh is imported. Run as ``python outside_mcp_server.py PORT``.

Its answer shows what it was given: the question line of the text, and how many facts
(``- `` lines) came with it."""

import sys

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("Fact Answerer")


@mcp.tool()
def answer(question: str) -> str:
    """Answer a question from the facts given with it."""
    lines = question.splitlines()
    asked = next(
        (line.removeprefix("Question: ") for line in lines if line.startswith("Question: ")), lines[0]
    )
    facts = sum(1 for line in lines if line.startswith("- "))
    return f"mcp answers {asked!r} from {facts} facts"


if __name__ == "__main__":
    mcp.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
