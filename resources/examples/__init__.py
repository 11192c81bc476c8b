"""Example harnesses from other domains than the live-room demo (each with its own tools)."""
