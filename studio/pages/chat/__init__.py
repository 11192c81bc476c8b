"""The Chat page: the served model's columns and their server cards."""
