"""The one exception type the store raises for anything a user can cause."""

from __future__ import annotations


class StoreError(Exception):
    """Unknown or ambiguous ref, locked or foreign database, newer schema, corrupt data, ...

    The message is written for the user (CLI and studio show it as is).
    """
