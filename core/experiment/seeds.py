"""Replications of several seeds side by side: `hat experiment seeds A/report.json B/...`.

One seed's HAT - fixed-SFT difference on HV-QA is one sample of the whole method (its
training tasks, HSA variants, data order and LoRA initialisation); its interval covers the
evaluation items' sampling only. Runs of other seeds (`hat experiment replicate --seed N`)
evaluate the same test tasks, so their differences can be paired task by task: the pooled
interval resamples tasks, each with every seed's pair (core.eval.stats.paired_bootstrap with
groups), so it widens where the seeds disagree.

A report written before per-task accuracies were kept in report.json (`per_task`) still gets
its row in the table; the pooled line then says which report lacks them instead of pooling.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.eval.stats import paired_bootstrap

MODELS = (("base", "base"), ("fixed", "fixed-SFT"), ("hat", "HAT"))


class SeedsError(ValueError):
    """A report that cannot be read or compared; the message names the file."""


@dataclass(frozen=True)
class SeedReport:
    path: Path
    seed: int
    data: dict[str, Any]

    def model(self, name: str) -> dict[str, Any]:
        models: dict[str, Any] = self.data.get("models") or {}
        entry: dict[str, Any] = models.get(name) or {}
        return entry

    def per_task(self, model: str, suite: str = "hv-qa") -> dict[str, float] | None:
        values = (self.model(model).get(suite) or {}).get("per_task")
        return {str(k): float(v) for k, v in values.items()} if values else None


def read_report(path: Path) -> SeedReport:
    """A replication's report.json (or the folder holding it)."""
    file = path / "report.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SeedsError(f"{file}: not a readable report.json ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise SeedsError(f"{file}: no 'models' table (is it a replication's report.json?)")
    seed = ((data.get("profile") or {}).get("data") or {}).get("seed", 0)
    return SeedReport(file, int(seed), data)


def _pct(ci: dict[str, Any] | None) -> str:
    if not ci or ci.get("mean") is None:
        return "—"
    text = f"{100 * ci['mean']:.1f}"
    if ci.get("low") is not None and ci.get("high") is not None:
        text += f" [{100 * ci['low']:.1f}, {100 * ci['high']:.1f}]"
    return text


def pooled_difference(reports: list[SeedReport]) -> dict[str, Any]:
    """HAT - fixed-SFT on HV-QA over every seed's tasks, paired, tasks resampled (module
    doc); `missing` names the reports without per-task accuracies (then nothing is pooled)."""
    missing = [
        str(r.path) for r in reports if r.per_task("hat") is None or r.per_task("fixed") is None
    ]
    if missing:
        return {"missing": missing}
    before: list[float] = []
    after: list[float] = []
    groups: list[str] = []
    for report in reports:
        hat, fixed = report.per_task("hat") or {}, report.per_task("fixed") or {}
        for task in sorted(set(hat) & set(fixed)):
            before.append(fixed[task])
            after.append(hat[task])
            groups.append(task)
    if not groups:
        return {"missing": [], "pairs": 0}
    ci = paired_bootstrap(before, after, groups=groups)
    return {
        "mean": ci.mean,
        "low": ci.low,
        "high": ci.high,
        "pairs": len(groups),
        "tasks": len(set(groups)),
    }


def seeds_markdown(reports: list[SeedReport]) -> str:
    """The table of every seed's headline numbers and the pooled HAT - fixed line."""
    if not reports:
        raise SeedsError("no reports given")
    seen: set[Path] = set()
    for report in reports:
        if report.path.resolve() in seen:
            raise SeedsError(f"{report.path}: given twice (a seed counts once)")
        seen.add(report.path.resolve())
    lines = [
        "| seed | model | LS-QA | HV-QA | variant gap (LS − HV) | HAT − fixed on HV-QA |",
        "|---|---|---|---|---|---|",
    ]
    for report in sorted(reports, key=lambda r: r.seed):
        for name, label in MODELS:
            entry = report.model(name)
            if not entry:
                continue
            gap = (entry.get("variants") or {}).get("gap")
            diff = _pct(entry.get("hv_minus_fixed")) if name == "hat" else ""
            lines.append(
                f"| {report.seed} | {label} | {_pct(entry.get('ls-qa', {}).get('accuracy'))} "
                f"| {_pct(entry.get('hv-qa', {}).get('accuracy'))} | {_pct(gap)} | {diff} |"
            )
    pooled = pooled_difference(reports)
    lines.append("")
    if pooled.get("missing"):
        names = ", ".join(pooled["missing"])
        lines.append(
            f"Pooled HAT − fixed on HV-QA: not computed; these reports keep no per-task "
            f"accuracies (written before report.json kept them): {names}."
        )
    elif pooled.get("pairs"):
        seeds = ", ".join(str(r.seed) for r in sorted(reports, key=lambda r: r.seed))
        lines.append(
            f"Pooled HAT − fixed on HV-QA over seeds {seeds}: **{_pct(pooled)}** points "
            f"({pooled['pairs']} task pairs, {pooled['tasks']} tasks resampled with every "
            "seed's pair; 95 % bootstrap)."
        )
    else:
        lines.append("Pooled HAT − fixed on HV-QA: the reports share no HV-QA task.")
    return "\n".join(lines) + "\n"
