"""The order desk's policy tool as an MCP server over stdio (official `mcp` SDK), so the
example exercises an MCP binding (`mcp:policies/get_policy`) end to end.

    python -m resources.examples.order_desk.policy_server
"""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import FastMCP

from resources.examples.order_desk.tools import get_policy as policy_of

server = FastMCP("policies")


@server.tool()
def get_policy(topic: str) -> dict[str, Any]:
    """The shop's policy on one topic: returns, refunds, shipping or damaged."""
    return policy_of(topic)


if __name__ == "__main__":
    server.run("stdio")
