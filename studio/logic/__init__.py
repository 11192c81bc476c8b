"""Qt-free logic of the studio: the edit document, diffs, component parsing, hook tests, variants.

Nothing in this package imports Qt (tests/test_studio_logic.py checks it), so every rule here is
tested with plain pytest and could move to `core` unchanged. The Qt views in `studio.pages` and
`studio.widgets` only display what these functions return.
"""
