"""`hat harness …`: validate, import/export, history, diff, labels, rollback, render, and
the outside formats: import-tools (MCP tool lists, OpenAI tools), import-mcp (a running MCP
server's tools, bound to it), import-skill (agentskills.io skill folders), import-hooks (Claude
Code settings.json), export-tools, export-hooks."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from core.cli.common import (
    console,
    err_console,
    esc,
    fail,
    open_store,
    print_problems,
    printable,
)
from core.harness import Harness, HarnessError, Problem, export_folder, import_folder
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
def validate(
    path: Annotated[Path, typer.Argument(help="Harness folder.")],
    trust: Annotated[
        bool,
        typer.Option(
            "--trust",
            help="Check python: and mcp: bindings fully: import their modules (this runs "
            "their code) and look for their servers' commands.",
        ),
    ] = False,
    probe: Annotated[
        bool,
        typer.Option(
            "--probe", help="Also start each MCP server and look its tools up (with --trust)."
        ),
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds an MCP server may take to start (--probe).")
    ] = 20.0,
    tasks: Annotated[
        Path | None,
        typer.Option(
            "--tasks",
            help="Also check this task file against the harness: the names its golds use and, "
            "with --trust, every task's gold played once through the real tools.",
        ),
    ] = None,
) -> None:
    """Check a harness folder; list every problem with its file and field, and every tool
    binding the runtime cannot run (tool, binding, reason, one a line)."""
    from core.runtime.tool_runtime import binding_problems, probe_bindings

    harness = _read(path, trust)
    _print_warnings(harness)
    if tasks is not None:
        _check_tasks(harness, tasks, trust)
    if probe:
        import asyncio

        found = asyncio.run(probe_bindings(harness, timeout_s=timeout))
    else:
        found = binding_problems(harness)
    problems = [p for p in found if not p.needs_trust]
    unchecked = [p for p in found if p.needs_trust]
    summary = (
        f"{esc(harness.name)}: {len(harness.skills)} skills, {len(harness.tools)} tools, "
        f"{len(harness.hooks)} hooks, {len(harness.prompt.sections)} prompt sections"
    )
    if problems:
        console.print(f"the folder is valid: {summary}", soft_wrap=True)
    for problem in problems:
        console.print(f"[red]binding[/red] {esc(problem.message)}", soft_wrap=True)
    if unchecked:
        names = ", ".join(p.tool for p in unchecked)
        console.print(
            f"[yellow]not checked (their code runs only once trusted): {esc(names)}; "
            "validate with --trust to import their modules and start their servers[/yellow]",
            soft_wrap=True,
        )
    if problems:
        fail(f"{len(problems)} tool(s) of {path} have bindings the runtime cannot run")
    console.print(f"[green]ok[/green] {summary}", soft_wrap=True)


def _print_warnings(harness: Harness) -> None:
    from core.harness.checks import harness_warnings

    for warning in harness_warnings(harness):
        console.print(
            f"[yellow]warning[/yellow] {esc(warning.file)}: {esc(warning.field)}: "
            f"{esc(warning.message)}",
            soft_wrap=True,
        )


def _check_tasks(harness: Harness, path: Path, trust: bool) -> None:
    """`validate --tasks`: the task file's names, then (trusted) each gold played once."""
    import asyncio

    from core.episode.open_world import WorldUnavailable, open_world
    from core.taskfile.models import TaskFileError, check_against_harness, load_task_file

    try:
        tasks = load_task_file(path)
    except TaskFileError as exc:
        fail(str(exc))
    problems = check_against_harness(
        tasks, {t.name for t in harness.tools}, {s.name for s in harness.skills}
    )
    if not problems and trust:

        async def golds() -> dict[str, str]:
            async with open_world(harness, task_file=True) as world:
                return await world.unplayable_golds(list(tasks))

        try:
            problems = list(asyncio.run(golds()).values())
        except WorldUnavailable as exc:
            fail(f"{path}: the golds cannot be played: {exc}")
    for problem in problems:
        console.print(f"[red]task[/red] {esc(problem)}", soft_wrap=True)
    if problems:
        fail(f"{len(problems)} problem(s) in {path} against {harness.name}")
    played = "every gold plays to full marks" if trust else "golds not played (add --trust)"
    console.print(
        f"[green]ok[/green] {path}: {len(tasks)} tasks, names match the harness; {played}",
        soft_wrap=True,
    )


@app.command("import")
def import_(
    path: Annotated[Path, typer.Argument(help="Harness folder to store as a new version.")],
    message: Annotated[str, typer.Option("--message", "-m")] = "import",
    trust: Annotated[
        bool,
        typer.Option(
            "--trust",
            help="Allow this folder's Python hooks, python: tools and MCP servers to run.",
        ),
    ] = False,
    tag: Annotated[str | None, typer.Option("--tag", help="Label to move to it.")] = None,
) -> None:
    """Store a harness folder as a new immutable version."""
    harness = _read(path, trust)
    if any(t.binding.startswith("python:") for t in harness.tools):
        from core.harness.folder import remember_python_roots

        remember_python_roots(harness.name, path)  # its package, for runs of the version
    with open_store() as store:
        info = store.commit(harness, message, tag=tag or None)
        # trust stored at an earlier import carries over: report what the version loads as
        harness = store.load(info.id)
    _print_warnings(harness)  # after the load: trust granted earlier is no warning
    console.print(f"stored {esc(info.harness_name)} version [bold]{info.id[:12]}[/bold]")
    untrusted = [h.name for h in harness.hooks if h.kind.value == "python" and not h.trusted]
    if untrusted:
        console.print(
            f"[yellow]python hooks not trusted (they will not run): {esc(', '.join(untrusted))}; "
            "re-import with --trust to allow them[/yellow]"
        )
    untrusted_tools = [t.name for t in harness.tools if not t.trusted]
    if untrusted_tools:
        console.print(
            "[yellow]python:/mcp:/http tools not trusted (their calls fail): "
            f"{esc(', '.join(untrusted_tools))}; re-import with --trust to allow them[/yellow]",
            soft_wrap=True,
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
        if c.change == "renamed":
            console.print(
                f"[bold]renamed[/bold] {c.component} {esc(c.old_name or '')} -> {esc(c.name)} "
                f"({esc(c.old_path or '')} -> {esc(c.path)})"
            )
        else:
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


# ----------------------------------------------------------------------------- outside formats

IntoOpt = Annotated[
    Path,
    typer.Option(
        "--into",
        help="Harness folder to add to (created when missing or empty).",
        show_default=False,
    ),
]
ReplaceOpt = Annotated[bool, typer.Option("--replace", help="Replace components of the same name.")]


def _added(what: str, names: list[str], into: Path, written: int, removed: int) -> None:
    shown = ", ".join(names) if names else "nothing"
    gone = f", {removed} old file(s) removed" if removed else ""
    console.print(
        f"added {len(names)} {what} to {esc(into)}: {esc(shown)} ({written} file(s) written{gone})",
        soft_wrap=True,
    )


def _renames(pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        old, sep, new = pair.partition("=")
        if not sep or not old or not new:
            fail(f"--rename {pair!r}: write OLD=NEW (the name in the file, then the new one)")
        out[old] = new
    return out


@app.command("import-tools")
def import_tools(
    files: Annotated[
        list[Path],
        typer.Argument(
            help="JSON files: an MCP tools/list result (or one MCP tool), an OpenAI tool or a "
            "JSON array of tools."
        ),
    ],
    into: IntoOpt,
    rename: Annotated[
        list[str] | None,
        typer.Option("--rename", help="OLD=NEW: give a tool another name (repeatable)."),
    ] = None,
    replace: ReplaceOpt = False,
) -> None:
    """Add the tools of MCP or OpenAI tool files to a harness folder."""
    from core.harness.interop import read_tools

    renames = _renames(rename or [])
    tools = []
    problems = []
    for file in files:
        try:
            tools.extend(read_tools(file, rename=renames, all_renames_used=False))
        except HarnessError as exc:
            problems.extend(exc.problems)
    known = {t.binding for t in tools}
    for old in sorted(set(renames) - known):
        problems.append(
            Problem("--rename", old, f"no tool in {len(files)} file(s) is named {old!r}")
        )
    _add(into, replace, "tool(s)", problems, tools=tools)


@app.command("import-skill")
def import_skill(
    folders: Annotated[
        list[Path], typer.Argument(help="Skill folders (SKILL.md with scripts/, assets/, ...).")
    ],
    into: IntoOpt,
    replace: ReplaceOpt = False,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Add none of the folders when any of them has a problem."),
    ] = False,
) -> None:
    """Add agentskills.io skill folders, with all their files, to a harness folder: each
    folder reported on its own, the valid ones added (all or none with --strict)."""
    from core.harness.checks import spec_warnings
    from core.harness.interop import read_skill_folder

    skills = []
    problems: list[Problem] = []
    refused = 0
    for folder in folders:
        try:
            skill = read_skill_folder(folder)
        except HarnessError as exc:
            refused += 1
            problems.extend(exc.problems)
            if not strict:
                console.print(f"[red]not added[/red] {esc(folder)}:", soft_wrap=True)
                print_problems(exc)
            continue
        skills.append(skill)
        warned = spec_warnings(Harness(name="skills", skills=[skill]))
        for warning in warned:
            console.print(
                f"[yellow]warning[/yellow] {esc(folder)}: {esc(warning.field)}: "
                f"{esc(warning.message)}",
                soft_wrap=True,
            )
    if strict:
        _add(into, replace, "skill(s)", problems, skills=skills)
        return
    if skills:
        _add(into, replace, "skill(s)", [], skills=skills)
    if refused:
        fail(f"{refused} of {len(folders)} skill folder(s) not added (their problems above)")


@app.command("bind")
def bind(
    folder: Annotated[Path, typer.Argument(help="Harness folder holding the tool.")],
    tool: Annotated[str, typer.Argument(help="The tool's name.")],
    binding: Annotated[
        str,
        typer.Argument(
            help="Its implementation: python:<module>:<function>, mcp:<server>/<tool> or an "
            "http(s):// URL."
        ),
    ],
    trust: Annotated[
        bool,
        typer.Option(
            "--trust", help="Also check the binding runs here (imports the module: runs its code)."
        ),
    ] = False,
) -> None:
    """Bind an imported tool to an implementation: the tool's file is rewritten, nothing else,
    after the binding's form (and with --trust, that it can be found) is checked."""
    from core.harness.interop import add_to_folder
    from core.runtime.tool_runtime import binding_problems, parse_binding

    harness = _read(folder, trust)
    current = harness.tool(tool)
    if current is None:
        names = ", ".join(t.name for t in harness.tools) or "none"
        fail(f"{folder} has no tool {tool!r} (its tools: {names})")
    target = parse_binding(binding)
    if target.kind in ("sim", "hsa", "unknown") or target.problem is not None:
        fail(
            f"binding {binding!r}: "
            + (
                target.problem
                or "give python:<module>:<function>, mcp:<server>/<tool> or an http(s):// URL"
            )
        )
    bound = current.model_copy(update={"binding": binding, "trusted": trust})
    if trust:
        from core.harness.folder import add_python_roots

        add_python_roots(folder)  # where the module will be looked for once bound
        probe = harness.model_copy(update={"tools": [bound]})
        problems = [p for p in binding_problems(probe) if not p.needs_trust]
        if problems:
            fail(f"{problems[0].message}; nothing was written")
    try:
        add_to_folder(folder, tools=[bound], replace=True)
    except HarnessError as exc:
        print_problems(exc)
        fail(f"nothing was written to {folder}")
    console.print(f"bound {esc(tool)} to {esc(binding)} in {esc(folder)}", soft_wrap=True)


@app.command("import-hooks")
def import_hooks(
    settings: Annotated[Path, typer.Argument(help="A Claude Code settings.json with hooks.")],
    into: IntoOpt,
    replace: ReplaceOpt = False,
) -> None:
    """Add a Claude Code settings.json's hooks to a harness folder; list what is left out."""
    from core.harness.interop import read_claude_hooks

    tool_names: list[str] = []
    if into.is_dir() and (into / "harness.yaml").exists():
        tool_names = [t.name for t in _read(into, trust=True).tools]
    try:
        found = read_claude_hooks(settings, tool_names=tool_names)
    except HarnessError as exc:
        print_problems(exc)
        fail(f"nothing was added to {into}")
    for skipped in found.skipped:
        console.print(
            f"[yellow]not imported[/yellow] {esc(skipped.where)}: {esc(skipped.reason)}",
            soft_wrap=True,
        )
    for note in found.notes:
        console.print(f"[yellow]note[/yellow] {esc(note)}", soft_wrap=True)
    _add(into, replace, "hook(s)", [], hooks=found.hooks)
    if found.hooks:
        console.print(
            "[yellow]command hooks run as python hooks, and only once trusted: store the "
            f"folder with hat harness import {esc(into)} --trust[/yellow]",
            soft_wrap=True,
        )


def _add(into: Path, replace: bool, what: str, problems: list[Problem], **components: Any) -> None:
    """Write the read components into the folder, or, when reading them found problems,
    print them all and write nothing."""
    from core.harness.interop import add_to_folder

    if problems:
        print_problems(HarnessError(problems))
        fail(f"nothing was added to {into}")
    try:
        added = add_to_folder(into, replace=replace, **components)
    except HarnessError as exc:
        print_problems(exc, into)
        fail(f"nothing was added to {into}")
    names = [c.name for items in components.values() if isinstance(items, list) for c in items]
    _added(what, names, into, len(added.written), len(added.removed))


def _pairs(option: str, pairs: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"{option} {pair!r}: write NAME=VALUE")
        out[key] = value
    return out


@app.command("import-mcp")
def import_mcp(
    into: IntoOpt,
    server_name: Annotated[
        str,
        typer.Option(
            "--name", help="The server's name in mcp.json (bindings are mcp:NAME/<tool>)."
        ),
    ],
    command: Annotated[str, typer.Option("--command", help="Executable that starts the server.")],
    args: Annotated[
        list[str] | None,
        typer.Option("--arg", help="An argument of the command (repeatable, in order)."),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option("--env", help="NAME=VALUE the server gets (repeatable)."),
    ] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", help="The server's working folder.")] = None,
    rename: Annotated[
        list[str] | None,
        typer.Option("--rename", help="OLD=NEW: give a tool another name (repeatable)."),
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds the server may take to start.")
    ] = 30.0,
    replace: ReplaceOpt = False,
) -> None:
    """Start an MCP server, read its tools/list and add its tools (bound to mcp:NAME/<tool>)
    and the server (to mcp.json) to a harness folder: all of them or, on any problem, none."""
    import asyncio

    from core.harness.interop import tools_from_data
    from core.harness.models import MCP_SERVER_NAME_RE, McpServer
    from core.runtime.bindings import ToolError
    from core.runtime.tool_runtime import list_server_tools

    if not MCP_SERVER_NAME_RE.match(server_name):
        fail(f"--name {server_name!r}: 1-64 characters of letters, digits, '_', '.' and '-'")
    try:
        server = McpServer(
            command=command, args=list(args or []), env=_pairs("--env", env or []), cwd=cwd
        )
    except ValueError as exc:
        fail(f"the server cannot be declared: {exc}")
    try:
        listed = asyncio.run(list_server_tools(server_name, server, timeout_s=timeout))
    except ToolError as exc:
        fail(f"{exc.message}\nnothing was added to {into}")
    where = f"tools/list of MCP server {server_name!r}"
    try:
        tools = tools_from_data({"tools": listed}, where, rename=_renames(rename or []))
    except HarnessError as exc:
        print_problems(exc)
        fail(f"nothing was added to {into}")
    for tool in tools:
        tool.binding = f"mcp:{server_name}/{tool.binding}"
    _add(into, replace, "tool(s)", [], tools=tools, mcp_servers={server_name: server})
    console.print(
        f"[yellow]MCP tools run only once trusted: store the folder with hat harness import "
        f"{esc(into)} --trust[/yellow]",
        soft_wrap=True,
    )


class ToolFormat(StrEnum):
    MCP = "mcp"
    OPENAI = "openai"


def _source(source: str, name: str | None) -> Harness:
    path = Path(source)
    if path.is_dir():
        return _read(path)
    with open_store() as store:
        return store.load(source, harness_name=name)


def _emit(data: Any, out: Path | None) -> None:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if out is None:
        typer.echo(printable(text, multiline=True), nl=False)
        return
    from core.harness.folder.safe_write import write_new

    try:
        write_new(out, text.encode("utf-8"))
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}")
    console.print(f"wrote {esc(out)}")


@app.command("export-tools")
def export_tools(
    source: Annotated[str, typer.Argument(help="Harness folder, or a stored version/label.")],
    fmt: Annotated[
        ToolFormat, typer.Option("--format", "-f", help="mcp: a tools/list result; openai: tools.")
    ] = ToolFormat.MCP,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File (default: stdout).")] = None,
    name: NameOpt = None,
) -> None:
    """Write a harness's enabled tools as an MCP tools/list result or an OpenAI tools array."""
    from core.harness.interop import mcp_tool_list, openai_losses, openai_tools

    harness = _source(source, name)
    data = mcp_tool_list(harness) if fmt is ToolFormat.MCP else openai_tools(harness)
    _emit(data, out)
    lost = openai_losses(harness) if fmt is ToolFormat.OPENAI else []
    if lost:
        err_console.print(
            "[yellow]left out: an OpenAI tools array has no place for these fields "
            "(export --format mcp keeps them):[/yellow]",
            soft_wrap=True,
        )
        for line in lost:
            err_console.print(f"  {esc(line)}", soft_wrap=True)


@app.command("export-hooks")
def export_hooks(
    source: Annotated[str, typer.Argument(help="Harness folder, or a stored version/label.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="File (default: stdout).")] = None,
    name: NameOpt = None,
) -> None:
    """Write the hooks imported from Claude Code back as a settings.json `hooks` object."""
    from core.harness.interop import claude_settings

    _emit(claude_settings(_source(source, name)), out)
