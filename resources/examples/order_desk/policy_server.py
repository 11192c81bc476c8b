"""The order desk's policy tool as an MCP server over stdio (the official `mcp` SDK's
MCPServer, mcp 2.x's name for FastMCP), so the example exercises an MCP binding
(`mcp:policies/get_policy`) end to end.

    python -m resources.examples.order_desk.policy_server
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as McpToolError

from core.runtime.bindings import ToolError
from resources.examples.order_desk.tools import get_policy as policy_of

server = MCPServer("policies")


@server.tool()
def get_policy(topic: str) -> dict[str, Any]:
    """The shop's policy on one topic: returns, refunds, shipping, damaged, exchanges,
    cancellations, international, preorders or gift-wrap."""
    try:
        return policy_of(topic)
    except ToolError as exc:  # an isError result whose text the agent sees
        raise McpToolError(exc.message) from None


if __name__ == "__main__":
    server.run("stdio")
