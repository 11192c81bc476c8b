"""Order desk: the customer-service agent of an online bookshop, a second example harness.

Its tools are plain Python functions (`tools.py`, bound as `python:...`) and one MCP server
(`policy_server.py`, bound as `mcp:policies/...`) over a small fixed shop (`shop.py`), so it
runs the whole loop — data, training, evaluation, chat — with nothing from the live room.

- `tasks.jsonl`: its task file, written from the shop by scripts/make_order_desk_tasks.py
  (seeded; `--check` plays every gold through the real tools);
- `hsa/train`, `hsa/heldout`: its HSA banks (disjoint);
- `harness-edited/`: the harness after an operator's edit (renamed tools, a renamed
  parameter through `binding_args`, a renamed skill keeping its role, sections moved, a new
  hook), for the harness-edit test, as resources/experiment/live-host-edited is the demo's.
"""
