"""HSA transforms: skill ids."""
