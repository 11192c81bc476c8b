"""The Harness page: the editors of a harness's parts, its versions and imports."""
