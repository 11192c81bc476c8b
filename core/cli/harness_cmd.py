"""`hat harness …`: validate, import/export, history, diff, labels, rollback, render."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from core.cli.common import console, esc, fail, open_store, print_problems, printable
from core.harness import Harness, HarnessError, export_folder, import_folder
from core.harness.models import ToolProtocol
from core.harness.render import render_system_prompt, tool_specs

app = typer.Typer(help="Author, version and inspect harnesses.", no_args_is_help=True)

DIFF_MAX_LINES = 2_000
DIFF_MAX_CHARS = 200_000
"""How much of one component's diff `hat harness diff` prints (the rest is counted)."""


def cap_text(text: str) -> tuple[str, str]:
    """(what to print, a note on what was cut or "") of a diff, capped at DIFF_MAX_LINES
    lines and DIFF_MAX_CHARS characters, so a 50 MB skill prints in a moment."""
    head = text[:DIFF_MAX_CHARS]
    lines = head.splitlines(keepends=True)
    kept = "".join(lines[:DIFF_MAX_LINES])
    if len(kept) == len(text):
        return text, ""
    total_lines = text.count("\n") + (not text.endswith("\n"))
    shown_lines = kept.count("\n")
    note = (
        f"... diff cut: showing {shown_lines:,} of {total_lines:,} lines "
        f"({len(kept):,} of {len(text):,} characters); export both versions "
        "(hat harness export) to see all of it"
    )
    return kept, note


NameOpt = Annotated[
    str | None, typer.Option("--name", "-n", help="Harness name (when the store holds several).")
]


def _read(path: Path, trust: bool = False) -> Harness:
    try:
        return import_folder(path, trust_python_hooks=trust)
    except HarnessError as exc:
        print_problems(exc, path)
        raise typer.Exit(1) from None


@app.command()
def validate(path: Annotated[Path, typer.Argument(help="Harness folder.")]) -> None:
    """Check a harness folder; list every problem with its file and field."""
    harness = _read(path)
    console.print(
        f"[green]ok[/green] {esc(harness.name)}: {len(harness.skills)} skills, "
        f"{len(harness.tools)} tools, {len(harness.hooks)} hooks, "
        f"{len(harness.prompt.sections)} prompt sections"
    )


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="Harness folder to store as a new version.")],
    message: Annotated[str, typer.Option("--message", "-m")] = "import",
    trust: Annotated[
        bool, typer.Option("--trust", help="Allow this folder's Python hooks to run.")
    ] = False,
    tag: Annotated[str | None, typer.Option("--tag", help="Label to move to it.")] = None,
) -> None:
    """Store a harness folder as a new immutable version."""
    harness = _read(path, trust)
    with open_store() as store:
        info = store.commit(harness, message)
        if tag:
            store.tag(tag, info.id)
    console.print(f"stored {esc(info.harness_name)} version [bold]{info.id[:12]}[/bold]")
    untrusted = [h.name for h in harness.hooks if h.kind.value == "python" and not h.trusted]
    if untrusted:
        console.print(
            f"[yellow]python hooks not trusted (they will not run): {esc(', '.join(untrusted))}; "
            "re-import with --trust to allow them[/yellow]"
        )


@app.command("export")
def export(
    ref: Annotated[str, typer.Argument(help="Version id, prefix or label.")],
    out: Annotated[Path, typer.Argument(help="Folder to write.")],
    name: NameOpt = None,
) -> None:
    """Write a stored version as a harness folder."""
    with open_store() as store:
        harness = store.load(ref, harness_name=name)
    try:
        export_folder(harness, out)
    except HarnessError as exc:
        print_problems(exc)
        fail(f"nothing exported to {out}")
    console.print(f"wrote {esc(out)}")


@app.command()
def log(
    name: NameOpt = None,
    limit: Annotated[int | None, typer.Option("--limit")] = None,
) -> None:
    """Version history, newest first."""
    with open_store() as store:
        versions = store.log(harness_name=name, limit=limit)
    if not versions:
        console.print("no versions stored yet")
    for v in versions:
        labels = f" [cyan]({esc(', '.join(v.labels))})[/cyan]" if v.labels else ""
        when = v.created_at.strftime("%Y-%m-%d %H:%M:%S")
        console.print(
            f"[bold]{v.id[:12]}[/bold] {when} {esc(v.harness_name)}{labels}  {esc(v.message)}",
            soft_wrap=True,  # one version, one line, whatever the terminal's width
        )


@app.command()
def diff(
    a: Annotated[str, typer.Argument(help="Older version (id, prefix or label).")],
    b: Annotated[str, typer.Argument(help="Newer version.")],
    name: NameOpt = None,
) -> None:
    """Per-component diff between two versions."""
    with open_store() as store:
        changes = store.diff(store.resolve(a, name), store.resolve(b, name))
    if not changes:
        console.print("no differences")
    for c in changes:
        console.print(f"[bold]{c.change}[/bold] {c.component} {esc(c.name)} ({esc(c.path)})")
        if c.unified:
            shown, cut = cap_text(c.unified)
            console.print(shown, markup=False, highlight=False, soft_wrap=True)
            if cut:
                console.print(f"[yellow]{cut}[/yellow]")


@app.command()
def tag(
    label: Annotated[str, typer.Argument(help="Label, e.g. production or staging.")],
    ref: Annotated[str, typer.Argument(help="Version id, prefix or label.")],
    name: NameOpt = None,
) -> None:
    """Create or move a label to a version."""
    with open_store() as store:
        version = store.resolve(ref, name)
        store.tag(label, version)
    console.print(f"{esc(label)} -> {version[:12]}")


@app.command()
def rollback(
    ref: Annotated[str, typer.Argument(help="Version to return to.")],
    message: Annotated[str | None, typer.Option("--message", "-m")] = None,
    name: NameOpt = None,
) -> None:
    """Make a new version whose content equals an older one."""
    with open_store() as store:
        info = store.rollback(store.resolve(ref, name), message)
    console.print(f"new version [bold]{info.id[:12]}[/bold]: {esc(info.message)}")


@app.command()
def render(
    source: Annotated[str, typer.Argument(help="Harness folder, or a stored version/label.")],
    name: NameOpt = None,
) -> None:
    """Print the rendered system prompt (with the tool block) as the model sees it."""
    path = Path(source)
    if path.is_dir():
        harness = _read(path)
    else:
        with open_store() as store:
            harness = store.load(source, harness_name=name)
    typer.echo(printable(render_system_prompt(harness), multiline=True))
    if harness.settings.tool_protocol is ToolProtocol.NATIVE:
        typer.echo("\n# tools (sent through the API)")
        specs = json.dumps(tool_specs(harness), indent=2, ensure_ascii=False)
        typer.echo(printable(specs, multiline=True))
