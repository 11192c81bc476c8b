"""Evaluation: suites through the one agent loop, statistics, reports, harness-change impact."""
