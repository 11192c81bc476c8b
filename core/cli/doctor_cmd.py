"""`hat doctor`: what is wrong with this installation, and the exact command that fixes it.

hat doctor                 every check; imports the training/serving packages in child processes
hat doctor --quick         only locates those packages (a few seconds)
hat doctor --json          the same report as JSON (for scripts and bug reports)
hat doctor --migrate       apply pending database migrations first, then check
hat doctor --min-free-gb 20

Exit status: 1 when any check FAILs (warnings and information do not count), else 0.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from core.cli.common import console, fail
from core.doctor import GIB, DoctorOptions, Report, Status
from core.doctor.checks import default_home, migrate_database

app = typer.Typer(help="Check this installation: environments, GPU, model, disk, database.")

_STYLE = {
    Status.OK: "green",
    Status.INFO: "cyan",
    Status.WARN: "yellow",
    Status.FAIL: "bold red",
}


def render(report: Report) -> Table:
    """The report as a table; fixes are printed after it, unwrapped, to copy and paste."""
    table = Table(title=f"HAT Studio doctor: {report.home}", show_lines=True)
    table.add_column("Check", no_wrap=True)
    table.add_column("Status", no_wrap=True)
    table.add_column("What was found", overflow="fold")
    for result in report.results:
        found = escape(result.summary)
        if result.details:
            found += "\n" + "\n".join(f"[dim]{escape(d)}[/dim]" for d in result.details)
        style = _STYLE[result.status]
        table.add_row(result.title, f"[{style}]{result.status.label}[/{style}]", found)
    return table


def print_fixes(report: Report) -> None:
    fixes = [r for r in report.results if r.fix and r.status >= Status.WARN]
    if not fixes:
        return
    console.print("\n[bold]How to fix[/bold]")
    for result in fixes:
        style = _STYLE[result.status]
        console.print(f"[{style}]{result.status.label}[/{style}] {escape(result.title)}:")
        console.print(f"    {escape(result.fix)}", soft_wrap=True)


@app.callback(invoke_without_command=True)
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    quick: Annotated[
        bool, typer.Option("--quick", help="locate packages instead of importing them")
    ] = False,
    migrate: Annotated[
        bool, typer.Option("--migrate", help="apply pending database migrations first")
    ] = False,
    min_free_gb: Annotated[
        float,
        typer.Option(
            "--min-free-gb",
            envvar="HAT_DOCTOR_MIN_FREE_GB",
            help="less free disk in the home folder is a failure",
        ),
    ] = 2.0,
    timeout: Annotated[
        float, typer.Option("--timeout", help="seconds each environment probe may take")
    ] = 240.0,
) -> None:
    """Check Python, the training and serving environments, the GPU, the demo model, free
    disk, the home folder and the database; print what is wrong and how to fix it."""
    from core.doctor.checks import run_doctor
    from core.store import StoreError

    if min_free_gb < 0 or timeout <= 0:
        fail("--min-free-gb must be >= 0 and --timeout > 0")
    home = default_home()
    if migrate:
        try:
            done = migrate_database(home)
        except (StoreError, OSError) as exc:
            fail(f"cannot migrate the database: {exc}")
        if not as_json:
            console.print(done)
    min_free = int(min_free_gb * GIB)
    options = DoctorOptions(
        home=home,
        quick=quick,
        min_free_bytes=min_free,
        warn_free_bytes=max(min_free, DoctorOptions(home=home).warn_free_bytes),
        probe_timeout_s=timeout,
    )
    if as_json:
        report = run_doctor(options)
        typer.echo(json.dumps(report.to_json(), indent=2))
    else:
        with console.status(
            "checking (the environment probes import torch and vllm: up to a minute)"
        ):
            report = run_doctor(options)
        console.print(render(report))
        counts = {s: sum(r.status is s for r in report.results) for s in Status}
        console.print(
            f"{counts[Status.FAIL]} failed, {counts[Status.WARN]} warning(s), "
            f"{counts[Status.OK]} ok, {counts[Status.INFO]} note(s)"
        )
        print_fixes(report)
    if report.failed:
        raise typer.Exit(1)
