"""HSA transforms: prompt."""
