"""The Train page (the three stages' forms and monitor) and the Runs page."""
