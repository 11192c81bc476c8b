"""`hat harness …`: validate, import/export, history, diff, labels, rollback, render."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from core.cli.common import console, open_store, print_problems
from core.harness import Harness, HarnessError, export_folder, import_folder
from core.harness.models import ToolProtocol
from core.harness.render import render_system_prompt, tool_specs

app = typer.Typer(help="Author, version and inspect harnesses.", no_args_is_help=True)

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
        f"[green]ok[/green] {harness.name}: {len(harness.skills)} skills, "
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
    console.print(f"stored {info.harness_name} version [bold]{info.id[:12]}[/bold]")
    untrusted = [h.name for h in harness.hooks if h.kind.value == "python" and not h.trusted]
    if untrusted:
        console.print(
            f"[yellow]python hooks not trusted (they will not run): {', '.join(untrusted)}; "
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
    export_folder(harness, out)
    console.print(f"wrote {out}")


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
        labels = f" [cyan]({', '.join(v.labels)})[/cyan]" if v.labels else ""
        when = v.created_at.strftime("%Y-%m-%d %H:%M:%S")
        console.print(f"[bold]{v.id[:12]}[/bold] {when} {v.harness_name}{labels}  {v.message}")


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
        console.print(f"[bold]{c.change}[/bold] {c.component} {c.name} ({c.path})")
        if c.unified:
            console.print(c.unified, markup=False, highlight=False)


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
    console.print(f"{label} -> {version[:12]}")


@app.command()
def rollback(
    ref: Annotated[str, typer.Argument(help="Version to return to.")],
    message: Annotated[str | None, typer.Option("--message", "-m")] = None,
    name: NameOpt = None,
) -> None:
    """Make a new version whose content equals an older one."""
    with open_store() as store:
        info = store.rollback(store.resolve(ref, name), message)
    console.print(f"new version [bold]{info.id[:12]}[/bold]: {info.message}")


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
    typer.echo(render_system_prompt(harness))
    if harness.settings.tool_protocol is ToolProtocol.NATIVE:
        typer.echo("\n# tools (sent through the API)")
        typer.echo(json.dumps(tool_specs(harness), indent=2, ensure_ascii=False))
