"""Transform modules, one per dimension; importing this package registers them all."""

from core.hsa.transforms import hooks, prompt, skill_content, skill_ids, tool_schemas

__all__ = ["hooks", "prompt", "skill_content", "skill_ids", "tool_schemas"]
