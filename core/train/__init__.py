"""Training runs without the torch stack: stage configs, launching, the run store, events."""
