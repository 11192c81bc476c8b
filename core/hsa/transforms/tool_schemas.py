"""HSA transforms: tool schemas."""
