"""The harness-change gate: what moving from version V1 to V2 does to one deployed model.

    report = impact(store, "demo", "production", "staging", suites=[Suite.LS_QA], limit=100)

1. **Runs.** The suites run under both versions with the same settings. A stored run of the
   same model, adapter, harness version and request fingerprint (core/eval/api.py) that
   covers the suites is reused when it is done; one that stopped or failed is resumed; else a
   new run is made. Re-running the gate after moving a label therefore costs only the new side.
2. **Pairs.** Items are paired by key (suite, task, variant seed, sample); a failed item counts
   as not passed and score 0; an infrastructure error (status error) on either side drops
   the pair (counted in `errors`: a timeout is not a change the edit made). `delta` = mean
   score under V2 - under V1 over the pairs, with a
   95 % paired bootstrap interval (`core.eval.stats.paired_bootstrap`, resampling whole tasks
   with all their pairs: HV-QA variants and samples of one task are not independent), and
   the same for the pass rate.
3. **Flips.** Pairs whose `passed` differs: `broke` (passed under V1 only) or `fixed`.
4. **Grouping.** The store diff of the two versions lists the changed components (tools,
   skills, hooks, prompt sections, the manifest); a component gone and one new of the same
   kind are one rename when they share a binding or role or are alike enough
   (`changes_between`, as git finds renames). A flip is attributed to the changed *specific*
   components it touched, narrowest evidence first: those the trace of the side that failed
   called (a tool by name or binding), loaded (a skill) or ran (a hook); when it touched
   none, those the other side's trace or the task's gold needs (the live room's plan:
   bindings, skills by role; a task file's gold calls and skills). Prompt sections and the
   manifest reach every request, so a flip is attributed to them only when it touched no
   specific change; a flip that touched nothing changed is listed apart (group None).
   Attribution is a reading of the traces, not a causal proof: a flip listed under a renamed
   tool is one whose failing run called it, or whose task needs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.eval.results import EvalResult, ResultStatus, Suite
from core.eval.stats import paired_bootstrap
from core.eval.store import ItemKey, list_runs, load_results, load_trace
from core.eval.types import (
    ClientFactory,
    ComponentChange,
    ComponentGroup,
    EvalError,
    EvalRequest,
    EvalRun,
    Flip,
    ImpactReport,
    ProgressCallback,
    RunStatus,
    StopFlag,
)
from core.sim.catalog import load_catalog
from core.sim.surface import HarnessSurface
from core.store.errors import StoreError
from core.taskfile.models import TaskFileError, load_task_file
from core.taskfile.sources import suite_tasks

if TYPE_CHECKING:
    from core.store import Store

GLOBAL_COMPONENTS = frozenset({"prompt", "manifest"})
"""Components every request meets (module doc, step 4)."""


# ----------------------------------------------------------------------------- runs


def _request_for(
    request: EvalRequest | None,
    model: str,
    version: str,
    suites: list[Suite],
    limit: int | None,
    adapter: str | None,
    base_url: str | None,
) -> EvalRequest:
    base = request or EvalRequest(model=model, suites=suites)
    return base.model_copy(
        update={
            "model": model,
            "adapter": adapter,
            "harness": version,
            "suites": suites,
            "limit": limit,
            "base_url": base_url if base_url is not None else base.base_url,
        }
    )


def reusable_run(store: Store, request: EvalRequest, version: str) -> EvalRun | None:
    """The newest stored run that answers `request` under `version` (done first, then one
    that stopped or failed and can be resumed), None when there is none."""
    candidates = [
        run
        for run in list_runs(
            store,
            model=request.model,
            fingerprint=request.fingerprint(),
            harness_version=version,
        )
        if run.adapter == request.adapter and set(request.suites) <= set(run.suites)
    ]
    for wanted in (
        (RunStatus.DONE,),
        (RunStatus.STOPPED, RunStatus.FAILED),
    ):
        matching = [r for r in candidates if r.status in wanted]
        if matching:
            return matching[-1]
    return None


async def _side(
    store: Store,
    request: EvalRequest,
    version: str,
    *,
    on_progress: ProgressCallback | None,
    stop: StopFlag | None,
    client_factory: ClientFactory | None,
    reused: list[str],
) -> EvalRun:
    from core.eval.runner import continue_run, start_run  # heavy: httpx, rich, jsonschema

    found = await asyncio.to_thread(reusable_run, store, request, version)
    if found is not None and found.status is RunStatus.DONE:
        reused.append(found.id)
        return found
    if found is not None:
        return await continue_run(
            store,
            found.id,
            on_progress=on_progress,
            stop=stop,
            client_factory=client_factory,
            base_url=request.base_url,
        )
    return await start_run(
        store, request, on_progress=on_progress, stop=stop, client_factory=client_factory
    )


async def run_impact(
    store: Store,
    model: str,
    from_ref: str,
    to_ref: str,
    *,
    suites: list[Suite] | None = None,
    limit: int | None = None,
    adapter: str | None = None,
    base_url: str | None = None,
    request: EvalRequest | None = None,
    on_progress: ProgressCallback | None = None,
    stop: StopFlag | None = None,
    client_factory: ClientFactory | None = None,
) -> ImpactReport:
    """api.impact (module doc)."""
    try:
        v_from = await asyncio.to_thread(store.info, from_ref)
        v_to = await asyncio.to_thread(store.info, to_ref)
    except StoreError as exc:
        raise EvalError(f"harness version: {exc}") from None
    chosen = list(dict.fromkeys(suites or [Suite.LS_QA]))
    if Suite.IFEVAL in chosen:
        raise EvalError("impact compares agent suites; IFEval runs without the harness")
    reused: list[str] = []
    runs: list[EvalRun] = []
    for version in (v_from.id, v_to.id):
        req = _request_for(request, model, version, chosen, limit, adapter, base_url)
        runs.append(
            await _side(
                store,
                req,
                version,
                on_progress=on_progress,
                stop=stop,
                client_factory=client_factory,
                reused=reused,
            )
        )
    run_from, run_to = runs
    changes = await asyncio.to_thread(changes_between, store, v_from.id, v_to.id)
    return await asyncio.to_thread(compare_runs, store, run_from, run_to, changes, chosen, reused)


# ----------------------------------------------------------------------------- comparison


def changes_between(store: Store, from_id: str, to_id: str) -> list[ComponentChange]:
    """The store diff as components, one change per component: a renamed one (found by the
    store as git finds renames: a shared binding or role, else alike content) is one
    `renamed` change naming its old name, whatever else its files changed."""
    diffs = store.diff(from_id, to_id)
    renamed_away = {(d.component, d.old_name) for d in diffs if d.change == "renamed"}
    out: dict[tuple[str, str], ComponentChange] = {}
    for d in diffs:
        key = (d.component, d.name)
        if key in renamed_away:  # a file only the old one had: part of the one rename
            continue
        if key in out and out[key].change == "renamed":
            continue
        if d.change == "renamed" or key not in out:
            out[key] = ComponentChange(d.component, d.name, d.change, d.path, d.old_name)
    return list(out.values())


def compare_runs(
    store: Store,
    run_from: EvalRun,
    run_to: EvalRun,
    changes: list[ComponentChange],
    suites: Iterable[Suite],
    reused: list[str] | None = None,
) -> ImpactReport:
    """The report of two stored runs (module doc, steps 2-4)."""
    wanted = {Suite(s) for s in suites}
    before = {r.key: r for r in load_results(store, run_from.id) if r.suite in wanted}
    after = {r.key: r for r in load_results(store, run_to.id) if r.suite in wanted}
    both = set(before) & set(after)
    broken = {k for k in both if ResultStatus.ERROR in (before[k].status, after[k].status)}
    keys = sorted(both - broken, key=lambda k: (k[0], k[1], k[2] or -1, k[3]))
    s_from = [_score(before[k]) for k in keys]
    s_to = [_score(after[k]) for k in keys]
    p_from = [float(_passed(before[k])) for k in keys]
    p_to = [float(_passed(after[k])) for k in keys]
    tasks = [k[1] for k in keys]
    delta, delta_ci = _paired(s_from, s_to, tasks)
    pass_delta, pass_ci = _paired(p_from, p_to, tasks)

    flipped = [k for k in keys if _passed(before[k]) != _passed(after[k])]
    attribution = _Attribution(store, run_from, run_to, changes)
    flips: list[Flip] = []
    for key in flipped:
        labels = attribution.components(key, failing=1 if _passed(before[key]) else 0)
        flips.append(
            Flip(
                key=key,
                direction="broke" if _passed(before[key]) else "fixed",
                before=before[key],
                after=after[key],
                components=tuple(labels),
            )
        )
    groups = [ComponentGroup(change) for change in changes]
    by_label = {g.change.label: g for g in groups if g.change is not None}
    loose = ComponentGroup(None)
    for flip in flips:
        if not flip.components:
            loose.flips.append(flip)
        for label in flip.components:
            by_label[label].flips.append(flip)
    if loose.flips:
        groups.append(loose)
    groups.sort(key=lambda g: (-len(g.flips), g.change.label if g.change else "~"))
    n = len(keys)
    return ImpactReport(
        model=run_to.model,
        adapter=run_to.adapter,
        from_version=run_from.harness_version or "",
        to_version=run_to.harness_version or "",
        suites=sorted(wanted, key=lambda s: list(Suite).index(s)),
        from_run=run_from.id,
        to_run=run_to.id,
        reused=list(reused or []),
        changes=changes,
        groups=groups,
        flips=flips,
        paired=n,
        errors=len(broken),
        score_from=sum(s_from) / n if n else 0.0,
        score_to=sum(s_to) / n if n else 0.0,
        pass_from=sum(p_from) / n if n else 0.0,
        pass_to=sum(p_to) / n if n else 0.0,
        delta=delta,
        delta_ci=delta_ci,
        pass_delta=pass_delta,
        pass_delta_ci=pass_ci,
    )


def _paired(
    before: list[float], after: list[float], tasks: list[str]
) -> tuple[float, tuple[float, float]]:
    """mean(after - before) and its 95 % paired bootstrap interval, resampling tasks (the
    HV-QA variants and the samples of one task are not independent)."""
    if not before:
        return 0.0, (0.0, 0.0)
    ci = paired_bootstrap(before, after, groups=tasks)
    return ci.mean, (ci.low, ci.high)


def _score(result: EvalResult) -> float:
    return result.score if result.status is ResultStatus.OK else 0.0


def _passed(result: EvalResult) -> bool:
    return result.passed and result.status is ResultStatus.OK


class _Attribution:
    """Which changed components an item touched (module doc, step 4)."""

    def __init__(
        self, store: Store, run_from: EvalRun, run_to: EvalRun, changes: list[ComponentChange]
    ) -> None:

        self.store = store
        self.runs = (run_from, run_to)
        self.changes = changes
        self.harnesses = tuple(
            store.load(run.harness_version or "head", run.harness) for run in self.runs
        )
        self.catalog = load_catalog()
        self._tasks: dict[str, Any] | None = None
        self._own_tasks: dict[str, Any] | None = None
        # component name -> binding, for changed tools (from whichever version has the tool)
        self.tool_bindings: dict[str, str] = {}
        for harness in self.harnesses:
            for tool in harness.tools:
                self.tool_bindings.setdefault(tool.name, tool.binding)

    def _task(self, task_id: str) -> Any:
        if self._tasks is None:
            seed = self.runs[1].request.seed
            self._tasks = {}
            for name in ("ls-qa", "robustness"):
                self._tasks.update({t.id: t for t in suite_tasks(name, seed)})
        return self._tasks.get(task_id)

    def components(self, key: ItemKey, *, failing: int = 1) -> list[str]:
        """The changed components a flip is attributed to, narrowest evidence first: those
        the trace of the side that failed (`failing`: 0 the `from` run, 1 the `to` run) met
        an error in (a tool call rejected or failed, a skill that did not load, a hook that
        did not allow); else those that trace called, loaded or ran; else those the other
        trace or the task's gold needs; else the global ones (prompt sections, the manifest),
        which reach every request."""
        for touched in self._touched(key, failing):
            specific = [
                c.label
                for c in self.changes
                if c.component not in GLOBAL_COMPONENTS and _hit(c, touched)
            ]
            if specific:
                return specific
        return [c.label for c in self.changes if c.component in GLOBAL_COMPONENTS]

    def _trace_names(self, index: int, key: ItemKey) -> tuple[Names, Names]:
        """(everything one side's trace touched, what it met an error in): tools called (and
        their bindings), skills loaded, hooks run."""

        touched, faulted = _names(), _names()
        trace = load_trace(self.store, self.runs[index].id, key) or {}
        surface = HarnessSurface(self.harnesses[index], {}, {}, {})
        for step in trace.get("steps") or []:
            kind = step.get("type")
            if kind == "tool_call":
                name = str(step.get("name"))
                binding = surface.binding_of(name)
                for names in (touched, faulted) if step.get("error") else (touched,):
                    names["tool"].add(name)
                    if binding is not None:
                        names["binding"].add(binding)
            elif kind == "skill_load":
                bad = step.get("ok") is False or bool(step.get("error"))
                for names in (touched, faulted) if bad else (touched,):
                    names["skill"].add(str(step.get("name")))
            elif kind == "hook":
                bad = step.get("decision") not in (None, "allow")
                for names in (touched, faulted) if bad else (touched,):
                    names["hook"].add(str(step.get("hook")))
        return touched, faulted

    def _gold_names(self, key: ItemKey) -> Names:
        """What the task's gold needs: the live room's plan (bindings, skills by role) or a
        task file's gold calls and skills (named in the file's harness)."""

        out = _names()
        own = self._own_task(key[1])
        if own is not None:
            out["tool"].update(call.tool for call in own.gold_calls)
            out["skill"].update(own.skills)
            out["binding"].update(
                b for b in (self.tool_bindings.get(t) for t in out["tool"]) if b is not None
            )
            return out
        task = self._task(key[1])
        if task is None:
            return out
        from core.sim.expect import plan_task  # heavy: jsonschema, regex

        plan = plan_task(task, self.catalog)
        out["binding"].update(spec.binding for spec in plan.required())
        roles = [*plan.gold_reply_roles(), *plan.strategy_roles()]
        for harness in self.harnesses:
            surface = HarnessSurface(harness, {}, {}, {})
            for role in roles:
                skill = surface.skill_name(role)
                if skill is not None:
                    out["skill"].add(skill)
        return out

    def _own_task(self, task_id: str) -> Any:
        """The task-file task `task_id` when the runs played a task file (else None)."""
        if self._own_tasks is None:
            self._own_tasks = {}
            path = self.runs[1].request.task_file
            if path:
                try:
                    self._own_tasks = {t.id: t for t in load_task_file(Path(path))}
                except (OSError, TaskFileError):
                    self._own_tasks = {}  # moved or edited since: attribute by traces only
        return self._own_tasks.get(task_id)

    def _touched(self, key: ItemKey, failing: int) -> tuple[Names, Names, Names]:
        """(what the failing side's trace met an error in, what it touched, what the other
        trace or the gold needs); a changed tool counts as touched by a binding reached."""
        traced, faulted = self._trace_names(failing, key)
        needed, _ = self._trace_names(1 - failing, key)
        for part, gold in self._gold_names(key).items():
            needed[part].update(gold)
        for names in (faulted, traced, needed):
            for tool_name, binding in self.tool_bindings.items():
                if binding in names["binding"]:
                    names["tool"].add(tool_name)
        return faulted, traced, needed


Names = dict[str, set[str]]
"""{"tool", "binding", "skill", "hook"}: names a trace or a gold touched."""


def _names() -> Names:
    return {"tool": set(), "binding": set(), "skill": set(), "hook": set()}


def _hit(change: ComponentChange, touched: dict[str, set[str]]) -> bool:
    names = touched.get(change.component, set())
    return any(name in names for name in change.names())


# ----------------------------------------------------------------------------- output


def report_markdown(report: ImpactReport) -> str:
    """A short Markdown summary (the CLI prints it; reports embed it)."""
    lo, hi = report.delta_ci
    plo, phi = report.pass_delta_ci
    lines = [
        f"# Harness change impact: {report.model}",
        "",
        f"- from `{report.from_version[:12]}` (run {report.from_run}) "
        f"to `{report.to_version[:12]}` (run {report.to_run})",
        f"- suites: {', '.join(s.value for s in report.suites)}; paired items: {report.paired}"
        + (
            f" ({report.errors} left out: an infrastructure error on a side)"
            if report.errors
            else ""
        ),
        f"- score {report.score_from:.3f} -> {report.score_to:.3f}: "
        f"delta {report.delta:+.3f} (95% CI {lo:+.3f} .. {hi:+.3f})",
        f"- pass rate {report.pass_from:.3f} -> {report.pass_to:.3f}: "
        f"delta {report.pass_delta:+.3f} (95% CI {plo:+.3f} .. {phi:+.3f})",
        f"- flips: {report.broke} broke, {report.fixed} fixed",
        "",
        "| component | broke | fixed | items |",
        "|---|---:|---:|---|",
    ]
    for group in report.groups:
        label = group.change.label if group.change is not None else "(no changed component)"
        items = ", ".join(
            f"{f.key[1]}" + (f"#{f.key[2]}" if f.key[2] is not None else "")
            for f in group.flips[:8]
        )
        more = f" (+{len(group.flips) - 8})" if len(group.flips) > 8 else ""
        lines.append(f"| {label} | {group.broke} | {group.fixed} | {items}{more} |")
    return "\n".join(lines) + "\n"
