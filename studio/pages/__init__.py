"""The studio's pages: one Qt view per area of the window."""
