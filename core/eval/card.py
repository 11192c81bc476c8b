"""The model card: what a trained model was trained on, and how it scored.

An operator who serves a fine-tuned agent model needs to know, months later, which harness it
learned (the version it was fine-tuned on is what an edit is measured against), on which data,
with which settings, and what it scored. All of it is in the store already: the registered
model names its training run (`meta.run`), the run its stage configs, harness version, dataset
hash and package versions, a pipeline its stages, and the evaluation runs of the model their
scores. `model_card` gathers them; `card_markdown` writes them as a README.md in the Hugging
Face model-card convention (YAML front matter: base_model, library_name, tags), which
`hat models card NAME --write` puts beside the weights.

`harness_warning` is the check Chat and serving make: a model served under a harness version
other than the one it was trained on says so, and names the impact gate that measures what
the difference does (`hat eval impact --from TRAINED --to SERVED`). `gate_verdict` reads what
that gate found, when both sides were evaluated already: the newest pair of finished runs of
the model under the trained and the served version with the same request fingerprint, paired
item by item as the gate pairs them (core/eval/impact.py `compare_runs`), and says whether
the served harness is worse or better beyond noise (the 95 % interval of the pass-rate
difference excludes zero) or not measurably different. `harness_notice` is the two together,
the line Chat, Evaluate and `hat chat` show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from core.eval.impact import compare_runs
from core.eval.report import build_report
from core.eval.results import Suite
from core.eval.store import list_runs as list_eval_runs
from core.eval.store import load_results
from core.eval.types import EvalRun, RunStatus
from core.models.grouping import merge_source
from core.models.registry import RegistryError, get
from core.store import Store
from core.store.serving import list_models
from core.store.training import RunRecord, find_run, list_runs

CARD_SUITES = (Suite.LS_QA, Suite.HV_QA, Suite.IFEVAL, Suite.TASKS, Suite.HV_TASKS)


@dataclass(frozen=True)
class StageLine:
    """One training stage of the model's lineage."""

    run: str
    stage: str
    status: str
    steps: str
    harness_version: str | None
    dataset_hash: str | None
    data: list[str]
    settings: dict[str, Any]


@dataclass(frozen=True)
class ScoreLine:
    suite: str
    passed: float | None
    """Share of items with full marks (the suite report's pass rate)."""
    items: int
    run: str
    harness_version: str | None


@dataclass
class ModelCard:
    name: str
    kind: str
    base: str | None
    location: str
    stages: list[StageLine] = field(default_factory=list)
    scores: list[ScoreLine] = field(default_factory=list)
    packages: dict[str, str] = field(default_factory=dict)

    @property
    def harness_versions(self) -> list[str]:
        """The stored harness versions the model was trained on, first stage first."""
        seen = [s.harness_version for s in self.stages if s.harness_version]
        return list(dict.fromkeys(seen))

    @property
    def variant_gap(self) -> float | None:
        """LS-QA minus HV-QA pass rate under the harness the model was trained on (a task
        file's own suites where the live room's were not run): what the variants cost it."""
        trained = self.harness_versions[-1] if self.harness_versions else None
        by = {
            s.suite: s.passed
            for s in self.scores
            if trained is None or s.harness_version in (trained, None)
        }
        for ls_suite, hv_suite in ((Suite.LS_QA, Suite.HV_QA), (Suite.TASKS, Suite.HV_TASKS)):
            ls, hv = by.get(ls_suite.value), by.get(hv_suite.value)
            if ls is not None and hv is not None:
                return ls - hv
        return None

    @property
    def gap_suites(self) -> str:
        """The two suites `variant_gap` compares, as the card names them."""
        names = {s.suite for s in self.scores}
        if {Suite.LS_QA.value, Suite.HV_QA.value} <= names:
            return "LS-QA minus HV-QA"
        return "task file's test split minus its held-out variants"


_SETTINGS = (
    "max_steps", "learning_rate", "lr_scheduler", "per_device_batch_size",
    "gradient_accumulation_steps", "max_length", "system_prompt", "num_generations",
    "max_completion_length", "teacher", "prompts", "tasks", "harness", "sampler", "seed",
)  # fmt: skip
"""The stage settings a card shows (the whole frozen config stays with the run)."""


def _stage_line(run: RunRecord) -> StageLine:
    try:
        config = yaml.safe_load(run.config) or {}
    except yaml.YAMLError:
        config = {}
    config = config if isinstance(config, dict) else {}
    data = config.get("data") or []
    lora = config.get("lora") if isinstance(config.get("lora"), dict) else None
    settings = {k: config[k] for k in _SETTINGS if config.get(k) is not None}
    if lora:
        settings["lora"] = {k: lora[k] for k in ("r", "alpha", "dropout") if k in lora}
    total = run.total_steps or run.step
    return StageLine(
        run=run.id,
        stage=run.stage,
        status=run.status,
        steps=f"{run.step}/{total}" if total else str(run.step),
        harness_version=run.harness_version,
        dataset_hash=run.dataset_hash,
        data=[str(d) for d in data] if isinstance(data, list) else [str(data)],
        settings=settings,
    )


def _lineage(store: Store, run_id: str | None) -> list[RunRecord]:
    """The training run and, for a pipeline's stage, every stage of its pipeline up to it."""
    run = find_run(store, run_id) if run_id else None
    if run is None:
        return []
    if run.parent is None:
        return [run]
    stages = [r for r in list_runs(store, parent=run.parent) if r.stage != "pipeline"]
    upto = [r.id for r in stages].index(run.id) + 1 if run.id in [r.id for r in stages] else 0
    return stages[:upto] or [run]


def _scores(store: Store, names: list[str], trained: str | None) -> list[ScoreLine]:
    """The newest finished run of each suite under each harness version, of the model under
    any of its names; the trained harness's rows first (an edit's run is a row of its own,
    it does not hide the score under the harness the model learned)."""
    newest: dict[tuple[str, str | None], tuple[Any, Any]] = {}
    for name in names:
        for run in list_eval_runs(store, model=name):
            if run.status is not RunStatus.DONE:
                continue
            for suite in run.request.suites:
                if suite in CARD_SUITES:
                    version = None if suite is Suite.IFEVAL else run.harness_version
                    newest[(suite.value, version)] = (run, suite)
    order = [s.value for s in CARD_SUITES]
    lines: list[ScoreLine] = []
    for key in sorted(newest, key=lambda k: (k[1] not in (trained, None), order.index(k[0]))):
        run, suite = newest[key]
        rows = load_results(store, run.id, suite=suite)
        if not rows:
            continue
        report = build_report(rows, resamples=200).suite(suite)
        passed = report.pass_rate.mean if report and report.pass_rate else None
        lines.append(ScoreLine(key[0], passed, len(rows), run.id, run.harness_version))
    return lines


def model_card(store: Store, name: str) -> ModelCard:
    """The card of a registered model (RegistryError for a name nothing registered)."""
    record = get(store, name)
    adapters = {m.name: m for m in list_models(store) if m.kind == "adapter"}
    source = merge_source(record, adapters)  # a merged copy: trained (and scored) as its adapter
    run_id = record.meta.get("run") or (get(store, source).meta.get("run") if source else None)
    runs = _lineage(store, run_id)
    names = [name] + ([source] if source else [])
    packages: dict[str, str] = {}
    for run in runs:
        packages.update(run.packages)
    stages = [_stage_line(r) for r in runs]
    trained = [s.harness_version for s in stages if s.harness_version]
    return ModelCard(
        name=record.name,
        kind=record.kind,
        base=record.base,
        location=record.location,
        stages=stages,
        scores=_scores(store, names, trained[-1] if trained else None),
        packages=packages,
    )


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def card_markdown(card: ModelCard, *, labels: dict[str, str] | None = None) -> str:
    """The card as a README.md (Hugging Face model-card front matter, then the tables)."""
    labels = labels or {}
    adapter = card.kind == "adapter"
    front = {
        "base_model": card.base,
        "library_name": "peft" if adapter else "transformers",
        "tags": ["hat-studio", "harness-aware-training", *(["lora"] if adapter else [])],
    }
    lines = ["---", yaml.safe_dump(front, sort_keys=False).rstrip(), "---", "", f"# {card.name}"]
    lines += ["", f"A {card.kind} model" + (f" on `{card.base}`" if card.base else "") + ","]
    lines[-1] += " trained and evaluated with HAT Studio (harness-aware training)."
    lines += ["", "## Harness it was trained on", ""]
    if card.harness_versions:
        lines += [f"- `{labels.get(v, v)}`" for v in card.harness_versions]
        lines += ["", "Served under another harness version, measure the edit first: "
                  "`hat eval impact --from <trained> --to <served>`."]  # fmt: skip
    else:
        lines.append("- not recorded (no training run of this model is in the store)")
    if card.stages:
        lines += ["", "## Training", "", "| stage | run | status | steps | data | settings |",
                  "|---|---|---|---|---|---|"]  # fmt: skip
        for s in card.stages:
            data = ", ".join(f"`{d}`" for d in s.data) or "–"
            if s.dataset_hash:
                data += f" (sha256 {s.dataset_hash[:12]})"
            settings = ", ".join(f"{k}={v}" for k, v in s.settings.items()) or "–"
            lines.append(
                f"| {s.stage} | `{s.run}` | {s.status} | {s.steps} | {data} | {settings} |"
            )
    lines += ["", "## Evaluation", ""]
    if card.scores:
        lines += ["| suite | full marks | items | run | harness |", "|---|---|---|---|---|"]
        for sc in card.scores:
            version = labels.get(sc.harness_version or "", sc.harness_version or "–")
            lines.append(
                f"| {sc.suite} | {_pct(sc.passed)} | {sc.items} | `{sc.run}` | `{version}` |"
            )
        if card.variant_gap is not None:
            gap = 100 * card.variant_gap
            lines += ["", f"Variant gap ({card.gap_suites}): {gap:+.1f} points."]
    else:
        lines.append("No finished evaluation of this model yet (`hat eval run --model NAME`).")
    if card.packages:
        lines += ["", "## Packages", ""]
        lines += [f"- {k} {v}" for k, v in sorted(card.packages.items())]
    return "\n".join(lines) + "\n"


def harness_warning(card: ModelCard, served_version: str | None) -> str | None:
    """A line saying the model is served under a harness it was not trained on (None when it
    is one of its training harnesses, or nothing is known)."""
    trained = card.harness_versions
    if not trained or served_version is None or served_version in trained:
        return None
    return (
        f"{card.name} was trained on harness version {trained[-1][:10]}, not on "
        f"{served_version[:10]}: measure the difference with "
        f"hat eval impact --from {trained[-1][:10]} --to {served_version[:10]}"
    )


@dataclass(frozen=True)
class GateVerdict:
    """What the impact gate measured between the trained and the served harness version."""

    trained: str
    served: str
    suites: list[str]
    paired: int
    pass_from: float
    pass_to: float
    pass_delta: float
    pass_delta_ci: tuple[float, float]
    from_run: str
    to_run: str

    @property
    def verdict(self) -> str:
        low, high = self.pass_delta_ci
        if high < 0:
            return "worse beyond noise"
        if low > 0:
            return "better beyond noise"
        return "no difference beyond noise"

    def line(self) -> str:
        low, high = self.pass_delta_ci
        return (
            f"impact gate ({', '.join(self.suites)}, {self.paired} paired items): pass rate "
            f"{_pct(self.pass_from)} under {self.trained[:10]} → {_pct(self.pass_to)} under "
            f"{self.served[:10]}, {100 * self.pass_delta:+.1f} points "
            f"[{100 * low:+.1f}, {100 * high:+.1f}]: {self.verdict}"
        )


def _same_items(run: EvalRun) -> str:
    """The run's request fingerprint with the task file's names resolved: a run under an
    edited harness names the original version the task file was written in
    (`task_file_harness`), a run under the original leaves it empty; both grade the same
    items by the same names."""
    request = run.request
    if request.task_file is None:
        return run.fingerprint
    names = request.task_file_harness or run.harness_version
    return request.model_copy(update={"task_file_harness": names}).fingerprint()


def gate_verdict(store: Store, card: ModelCard, served_version: str) -> GateVerdict | None:
    """The gate's reading of trained → served from stored runs (module doc); None when the
    model has no finished run under both versions with the same request."""
    trained = card.harness_versions
    if not trained or served_version in trained:
        return None
    runs = [
        run
        for run in list_eval_runs(store)
        if card.name in (run.model, run.adapter) and run.status is RunStatus.DONE
    ]
    agent = {s for s in Suite if s is not Suite.IFEVAL}
    befores = {
        _same_items(run): run for run in runs if run.harness_version == trained[-1]
    }  # the newest run of each request (list_runs is oldest first)
    for after in reversed(runs):
        if after.harness_version != served_version:
            continue
        before = befores.get(_same_items(after))
        if before is None:
            continue
        suites = set(before.suites) & set(after.suites) & agent
        if not suites:
            continue
        report = compare_runs(store, before, after, [], suites)
        if not report.paired:
            continue
        return GateVerdict(
            trained=trained[-1],
            served=served_version,
            suites=[s.value for s in report.suites],
            paired=report.paired,
            pass_from=report.pass_from,
            pass_to=report.pass_to,
            pass_delta=report.pass_delta,
            pass_delta_ci=report.pass_delta_ci,
            from_run=before.id,
            to_run=after.id,
        )
    return None


def harness_notice(store: Store, name: str, served_version: str | None) -> str | None:
    """`harness_warning` and, when the gate has measured that difference, its verdict (else
    a note that it has not). None when `name` is served under a harness it was trained on,
    when nothing is known of its training, or when nothing by that name is registered."""
    try:
        card = model_card(store, name)
    except RegistryError:
        return None
    warning = harness_warning(card, served_version)
    if warning is None or served_version is None:
        return warning
    verdict = gate_verdict(store, card, served_version)
    if verdict is None:
        return f"{warning} (the gate has not measured it yet)"
    return f"{warning}. Measured: {verdict.line()}"
