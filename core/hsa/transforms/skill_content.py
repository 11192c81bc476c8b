"""HSA transforms: skill content."""
