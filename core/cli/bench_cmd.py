"""`hat bench latency`: replay simulator tasks through the agent loop and report latency.

    hat bench latency --tasks test --concurrency 1 -n 20
    hat bench latency --engine vllm --tasks dev -n 50 --concurrency 4 --out vllm.json
    hat bench latency --url http://127.0.0.1:8000/v1 --engine vllm -n 10   (a running server)
    hat bench latency --engine vllm --speculative ngram:4 -n 20   (acceptance in the report)

Prints P50/P95 (P99 with >= 100 samples) of TTFT, TPOT, model-call e2e and agent-request e2e
as the client measured them, and on vLLM also the server's view from its /metrics histograms,
so the two can be compared, and the decode rate (1 / mean TPOT). With speculative decoding on,
the acceptance over the measured requests (from /metrics) is printed beside them; the speed-up
needs a run without it on the same tasks (benchmarks/speculative.py alternates the two).
Every request is stored (`latency_requests`/`latency_calls`, the
session id is printed); the JSON report goes to --out (default
`<home>/runs/bench/<session>.json`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from core.cli.common import console, esc, fail, open_store
from core.cli.serve_cmd import (
    AdapterOpt,
    DraftModelOpt,
    EngineOpt,
    ModelOpt,
    PythonOpt,
    SpeculativeOpt,
    engine_config,
    start_server,
)
from core.store.harness_ref import DEFAULT_RULE

app = typer.Typer(help="Benchmarks against a served model.", no_args_is_help=True)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{1000 * value:.1f}"


def print_report(report: dict[str, Any]) -> None:
    console.print(
        f"session {report['session']} · {esc(report['engine'] or '?')} · "
        f"{esc(report['model'])} · tasks {esc(report['tasks'])} · n={report['n']} "
        f"(+{report['warmup']} warm-up) · concurrency {report['concurrency']} · "
        f"{report['wall_s']:.1f} s"
    )
    console.print(
        f"statuses {esc(report['statuses'])} · {report['model_calls']} model calls · "
        f"{report['tool_calls']} tool calls · {report['hook_retries']} hook retries · "
        f"tokens from {report['token_source']}"
    )
    table = Table(title="client view (ms)", box=None, header_style="bold")
    for column in ("metric", "n", "P50", "P95", "P99", "mean"):
        table.add_column(column, justify="right" if column != "metric" else "left")
    for metric, s in report["client"].items():
        table.add_row(
            metric, str(s["n"]), _ms(s["p50"]), _ms(s["p95"]), _ms(s["p99"]), _ms(s["mean"])
        )
    console.print(table)
    tpot = report["client"].get("tpot_s", {}).get("mean")
    if tpot:
        console.print(f"decode {1 / tpot:.1f} tok/s (1 / mean TPOT, client view)")
    spec = report.get("speculative")
    if spec:
        rate, per_draft = spec["acceptance_rate"], spec["accepted_per_draft"]
        console.print(
            f"speculative decoding: acceptance "
            f"{'-' if rate is None else f'{100 * rate:.1f} %'} "
            f"({spec['accepted_tokens']}/{spec['draft_tokens']} proposed tokens, "
            f"{spec['drafts']} drafts, "
            f"{'-' if per_draft is None else f'{per_draft:.2f}'} accepted per draft)"
        )
    server = report.get("server")
    if server:
        table = Table(title="server view, vLLM /metrics (ms)", box=None, header_style="bold")
        for column in ("metric", "histogram", "n", "P50", "P95", "mean"):
            table.add_column(
                column, justify="right" if column not in ("metric", "histogram") else "left"
            )
        for metric, s in server.items():
            table.add_row(
                metric, s["metric"], str(s["n"]), _ms(s["p50"]), _ms(s["p95"]), _ms(s["mean"])
            )
        console.print(table)


@app.command("latency")
def latency_cmd(
    tasks: Annotated[
        str, typer.Option("--tasks", help="Split (train|dev|test), suite or tasks JSONL.")
    ] = "test",
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1)] = 1,
    n: Annotated[int, typer.Option("-n", min=1, help="Measured requests.")] = 20,
    warmup: Annotated[int, typer.Option("--warmup", min=0, help="Unmeasured first requests.")] = 2,
    engine: EngineOpt = "transformers",
    model: ModelOpt = None,
    adapter: AdapterOpt = None,
    python: PythonOpt = None,
    speculative: SpeculativeOpt = None,
    draft_model: DraftModelOpt = None,
    url: Annotated[str | None, typer.Option("--url", help="Use a running server.")] = None,
    model_id: Annotated[str | None, typer.Option("--model-id", help="Model id at --url.")] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Per model call.")] = 256,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", help="Cap model calls per request.")
    ] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per model call.")] = 120.0,
    seed: Annotated[int, typer.Option("--seed", help="Task selection seed.")] = 0,
    harness: Annotated[
        str | None,
        typer.Option(
            "--harness",
            help=f"Folder or stored version (default: {DEFAULT_RULE}).",
        ),
    ] = None,
    out: Annotated[Path | None, typer.Option("--out", help="JSON report path.")] = None,
) -> None:
    """Latency percentiles of agent requests replayed from simulator tasks."""
    from core.cli.chat_cmd import _first_model, load_harness
    from core.paths import runs_dir
    from core.serving.bench import run_latency_bench, select_tasks
    from core.serving.client import GenerationOptions, OpenAIChatClient

    the_harness = load_harness(harness)
    if max_turns is not None:
        the_harness.settings.max_turns = max_turns
    try:
        chosen = select_tasks(tasks, warmup + n, seed=seed)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    server = None
    with open_store() as store:
        if url is None:
            server = start_server(
                store,
                engine_config(
                    engine, python=python, speculative=speculative, draft_model=draft_model
                ),
                model,
                adapter=adapter,
            )
            base_url, mid = server.base_url, server.model_id
            root = server.root_url
        else:
            base_url = url.rstrip("/")
            mid = model_id or _first_model(base_url)
            root = base_url.removesuffix("/v1")
        metrics = None
        if engine == "vllm":
            import httpx

            def metrics() -> str:
                return httpx.get(f"{root}/metrics", timeout=10).text

        errors: list[str] = []
        try:

            async def run() -> dict[str, Any]:
                client = OpenAIChatClient(
                    base_url,
                    mid,
                    options=GenerationOptions(max_tokens=max_tokens),
                    timeout_s=timeout,
                )
                done = 0

                def progress(row: Any) -> None:
                    nonlocal done
                    done += 1
                    if not row.warmup and row.status == "model_error" and row.error:
                        errors.append(row.error)
                    tag = "warm-up" if row.warmup else f"{done - warmup}/{n}"
                    console.print(
                        f"[dim]{tag} {esc(row.task_id)}: {esc(row.status)} in {row.e2e_s:.2f} s "
                        f"({row.model_calls} calls)[/dim]"
                    )

                try:
                    result = await run_latency_bench(
                        the_harness,
                        client,
                        chosen,
                        n=n,
                        concurrency=concurrency,
                        warmup=warmup,
                        engine=engine,
                        model=model or mid,
                        task_spec=tasks,
                        store=store,
                        metrics=metrics,
                        on_request=progress,
                    )
                finally:
                    await client.aclose()
                return result.to_json()

            report = asyncio.run(run())
        finally:
            if server is not None:
                server.stop()
    path = out or runs_dir() / "bench" / f"{report['session']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_report(report)
    console.print(f"report: {esc(path)}")
    measured = sum(report["statuses"].values()) if report.get("statuses") else 0
    if measured and report["statuses"].get("model_error", 0) == measured:
        first = f": {errors[0]}" if errors else ""
        fail(
            f"no request got a reply from the model server at {base_url} (all {measured} "
            f"ended in model_error){first}"
        )
