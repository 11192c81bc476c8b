"""The Evaluate page: runs, results, plots and the harness-edit impact test."""
