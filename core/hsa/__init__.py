"""Harness-State Augmentation: task-preserving harness transforms with exact trajectory remaps."""
