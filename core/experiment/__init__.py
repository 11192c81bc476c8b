"""Running the harness-edit experiment: profiles, stages, the report."""
