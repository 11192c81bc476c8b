"""HSA transforms: hooks."""
