"""What every `hat` command shares: the console, error printing and store access.

User-caused failures end as one readable message and exit code 1, never a traceback.

Text from a harness, a model or the store (names, messages, replies, reasons) is data, never
terminal markup: commands interpolate it through `esc()` (Rich markup escaped, one line,
control characters shown as `\x1b`-style escapes), and the consoles themselves show every
control character except newline and tab as an escape, so no string can recolour, move the
cursor, or forge a line of output.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from core.durations import format_duration
from core.harness import HarnessError

if TYPE_CHECKING:
    from core.store import Store

# Options several commands share, so they read (and are documented) the same everywhere.
TaskFileOpt = Annotated[
    Path | None,
    typer.Option("--tasks", help="Task file (JSONL) for the tasks suite (implies it)."),
]
JudgeUrlOpt = Annotated[
    str | None, typer.Option("--judge-url", help="Judge endpoint for reference-only tasks.")
]
JudgeModelOpt = Annotated[str | None, typer.Option("--judge-model", help="Judge model id.")]
TrustOpt = Annotated[
    bool,
    typer.Option("--trust", help="Let the --harness folder's Python code and MCP servers run."),
]

# C0 and C1 controls, DEL, line/paragraph separators, bidi overrides and isolates
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_KEEP_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)


def _show(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code == 0x0A:
        return "\\n"
    if code == 0x09:
        return "\\t"
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, multiline: bool = False) -> str:
    """`text` with every control character shown as an escape (\\x1b, \\n, \\u202e), so it
    cannot drive the terminal; `multiline` keeps newlines and tabs as they are."""
    return (_CONTROL_KEEP_LINES if multiline else _CONTROL).sub(_show, text)


def esc(value: object, *, multiline: bool = False) -> str:
    """`value` as literal text inside Rich markup (for f-strings printed with markup): control
    characters escaped (newlines too, unless `multiline`), then `[` escaped so it opens no
    tag."""
    return escape(printable(str(value), multiline=multiline))


def cell(value: object) -> Text:
    """`value` as a table cell: literal text (a `str` cell would be read as markup), control
    characters escaped."""
    return Text(printable(str(value)))


class SafeConsole(Console):
    """A Rich console that never passes a control character through to the terminal."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        cleaned = [printable(o, multiline=True) if isinstance(o, str) else o for o in objects]
        super().print(*cleaned, **kwargs)


class ProgressLines:
    """Progress for output that is not a terminal (a log file, CI): one plain line every
    `every_items` items or `every_s` seconds, whichever comes first, and at the end, with
    items done, rate and time left, e.g. ``eval: 40/200 (20%) · 1.3 items/s · ETA 2m03s``.
    (A live bar draws nothing useful into a file, so a long job would look stalled.)"""

    def __init__(
        self,
        label: str,
        *,
        out: Console | None = None,
        every_items: int = 25,
        every_s: float = 30.0,
        clock: Any = None,
    ) -> None:
        import time

        self.label = label
        self.out = out if out is not None else err_console
        self.every_items = max(1, every_items)
        self.every_s = every_s
        self.clock = clock or time.monotonic
        self.start = self.clock()
        self.last_time = self.start
        self.last_done = 0

    def update(self, done: int, total: int | None, last: str = "") -> None:
        now = self.clock()
        finished = total is not None and done >= total
        due = done - self.last_done >= self.every_items or now - self.last_time >= self.every_s
        if not (due or finished) or (done == self.last_done and not finished):
            return
        self.last_time, self.last_done = now, done
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        parts = [f"{done}/{total}" if total else str(done)]
        if total:
            parts[0] += f" ({100 * done // total}%)"
        parts.append(f"{rate:.2f} items/s")
        if total and rate > 0 and not finished:
            parts.append(f"ETA {format_duration((total - done) / rate)}")
        elif finished:
            parts.append(f"done in {format_duration(elapsed)}")
        line = f"{self.label}: {' · '.join(parts)}"
        if last:
            line += f" · last {last}"
        self.out.print(printable(line), markup=False, highlight=False, soft_wrap=True)


console = SafeConsole(highlight=False, emoji=False)  # ":smile:" in user text stays text
err_console = SafeConsole(stderr=True, highlight=False, emoji=False)


def fail(message: str) -> NoReturn:
    """Print `message` (plain text, never markup) as an error and exit with status 1."""
    err_console.print(f"[red]error:[/red] {escape(printable(message, multiline=True))}")
    raise typer.Exit(1)


def describe_os_error(exc: OSError) -> str:
    """ "PATH: reason" for an error about a path, else the error's own words."""
    if exc.filename is None:
        return str(exc)
    if isinstance(exc, FileExistsError) and not Path(exc.filename).is_dir():
        return f"{exc.filename}: is a file where a folder is needed"
    target = f" -> {exc.filename2}" if exc.filename2 is not None else ""
    return f"{exc.filename}{target}: {exc.strerror or exc}"


def print_problems(exc: HarnessError, root: Path | None = None) -> None:
    where = f" in {esc(root)}" if root else ""
    err_console.print(f"[red]{len(exc.problems)} problem(s){where}:[/red]")
    for problem in exc.problems:
        err_console.print(f"  {printable(str(problem))}", markup=False, soft_wrap=True)


@contextmanager
def open_store() -> Iterator[Store]:
    from core.store import Store, StoreError

    try:
        store = Store.open()
    except StoreError as exc:
        fail(str(exc))
    try:
        yield store
    except StoreError as exc:
        fail(str(exc))
    except HarnessError as exc:
        print_problems(exc)
        raise typer.Exit(1) from None
    finally:
        store.close()
