"""YAML files the user names (stage configs, pipeline and experiment profiles).

Every way such a file can be wrong ends in one `YamlFileError` whose message names the file
and, for a syntax error, the line and column: the callers turn it into their own problem list
instead of letting a decoder's or PyYAML's traceback reach the user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class YamlFileError(ValueError):
    """A YAML file that cannot be read or parsed; the message names the file."""


def yaml_problem(exc: yaml.YAMLError, line_offset: int = 0) -> tuple[str, str]:
    """(position, problem) of a PyYAML error: "line L, column C" (or "" when PyYAML gives
    no mark) and its one-line problem, without PyYAML's multi-line context dump."""
    mark = getattr(exc, "problem_mark", None)
    pos = f"line {mark.line + 1 + line_offset}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or str(exc)
    return pos, problem


def parse_yaml(text: str, source: str) -> Any:
    """The YAML document in `text` (None when empty); `source` names it in errors."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        pos, problem = yaml_problem(exc)
        where = f"{source}, {pos}" if pos else source
        raise YamlFileError(f"{where}: not valid YAML: {problem}") from None
    except (ValueError, RecursionError, OverflowError, MemoryError) as exc:
        # int("9" * 5000) and deep nesting escape PyYAML's own error types
        message = f"{source}: not valid YAML: {type(exc).__name__}: {exc}"
        raise YamlFileError(message[:300]) from None


def read_yaml_file(path: str | Path) -> Any:
    """The YAML document in the file at `path` (None when empty)."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise YamlFileError(f"{file}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise YamlFileError(f"cannot read {file}: {exc.strerror or exc}") from None
    return parse_yaml(text, str(file))
