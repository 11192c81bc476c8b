"""Task files: an operator's own tasks for any harness (evaluation, teacher data, HSA golds).

A task file is JSONL, one task a line (docs/task-files.md):

    {"id": "order-status-1", "message": "Where is my order A1001?",
     "facts": ["shipped", ["March 3", "3 March"]],
     "gold_calls": [{"tool": "lookup_order", "arguments": {"order_id": "A1001"}}],
     "skills": ["order-help"], "category": "orders", "split": "test"}

The live-room demo has its own generated tasks (core/sim/tasks.py) graded against the
simulator's truth; task files are how every other harness gets graded: by the facts the reply
must state, the gold tool calls it should make, the skills it should load and, where a task
gives a reference answer instead of facts, an LLM judge (core/taskfile/judge.py).
"""
