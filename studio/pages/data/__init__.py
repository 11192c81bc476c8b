"""The Data page: tasks, generated rows and their conversations."""
