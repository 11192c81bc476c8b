"""The Variants page: HSA variants of a harness previewed against its own."""
