"""Order desk: the customer-service agent of an online bookshop, a second example harness.

Its tools are plain Python functions (`tools.py`, bound as `python:...`) and one MCP server
(`policy_server.py`, bound as `mcp:policies/...`) over a small fixed shop (`shop.py`), so it
runs the whole loop — data, training, evaluation, chat — with nothing from the live room.
"""
