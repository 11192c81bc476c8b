"""What every `hat` command shares: the console, error printing and store access.

User-caused failures end as one readable message and exit code 1, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import typer
from rich.console import Console

from core.harness import HarnessError

if TYPE_CHECKING:
    from core.store import Store

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


def fail(message: str) -> NoReturn:
    err_console.print(f"[red]error:[/red] {message}", markup=True)
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
    where = f" in {root}" if root else ""
    err_console.print(f"[red]{len(exc.problems)} problem(s){where}:[/red]")
    for problem in exc.problems:
        err_console.print(f"  {problem}", markup=False)


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
