"""The `hat` command, one module per area (main.py mounts them).

Commands import what they need inside their functions: the CLI is a start-up path, and
`hat --help` or one command should not load the store, the servers or the evaluation code the
other commands use (docs/architecture.md, "Imports inside functions").
"""
