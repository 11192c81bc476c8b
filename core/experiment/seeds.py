"""Several seeds of one replication as one experiment.

    hat experiment replicate --profile cpu --seeds 0 1 2 --out runs/cpu-seeds
    hat experiment seeds A/report.json B/report.json   # runs started one by one

One seed's HAT - fixed-SFT difference on HV-QA is one sample of the whole method (its
training tasks, HSA variants, data order and LoRA initialisation); its interval covers the
evaluation items' sampling only. Runs of other seeds (`Profile.with_seed`) evaluate the same
test tasks, so their differences can be paired task by task: the pooled interval resamples
tasks, each with every seed's pair (core.eval.stats.paired_bootstrap with groups), so it
widens where the seeds disagree.

**Runs.** `--seeds` runs each seed's replication in its own folder, `<out>/seed-N`, one after
another. A seed whose folder already holds a replication is resumed (finished steps are kept:
nothing is trained again) and refused when that run's profile is not the asked profile under
that seed, naming the field. Once every seed has its report, `<out>/pooled.md` and
`pooled.json` are written.

**The pooled report.** Its first line is HAT - fixed-SFT on HV-QA *answered correctly*
(core/experiment/report.py: accuracy 1 and effectiveness 1), pooled over the seeds and paired
by task, with its interval; each seed's headline numbers follow. Reports are pooled only when
they are runs of one experiment: their profiles agree on every field but the seed's
(`SEED_FIELDS`), each seed counts once, and runs whose evaluation finished evaluated the same
HV-QA tasks; anything else is refused with the field (or the tasks) and both values named.

A report written before per-task answered-correctly was kept in report.json
(`per_task_answered`) still gets its row (its accuracy columns); the pooled line leaves it
out and says so, and pools the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.eval.stats import paired_bootstrap

if TYPE_CHECKING:
    from core.experiment.profiles import Profile
    from core.experiment.replicate import Replication
    from core.store import Store

MODELS = (("base", "base"), ("fixed", "fixed-SFT"), ("hat", "HAT"))
SEED_FIELDS = (
    ("data", "seed"),
    ("hat", "sft", "seed"),
    ("hat", "opd", "seed"),
    ("hat", "rl", "seed"),
    ("hat", "rl", "task_seed"),
)
"""The profile fields `Profile.with_seed` sets: the only ones two seeds of one experiment may
differ in."""
EXTRA_FIELDS = (("eval", "stages"), ("eval", "stage_suites"))
"""Profile fields that only add evaluations of other models (HAT's stage adapters) and change
nothing of the experiment's models or items: a run folder or report written before them (or
with them set otherwise) is still a seed of the same experiment."""
POOLED_MD = "pooled.md"
POOLED_JSON = "pooled.json"
_ABSENT = "(absent)"


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

    def per_task(
        self, model: str, suite: str = "hv-qa", key: str = "per_task_accuracy"
    ) -> dict[str, float] | None:
        """Each task's accuracy (`per_task_accuracy`) or answered correctly
        (`per_task_answered`). Reports written before 2026-12-08 name the accuracy one
        `per_task`: it is read under either name."""
        found = self.model(model).get(suite) or {}
        values = found.get(key)
        if values is None and key == "per_task_accuracy":
            values = found.get("per_task")
        return {str(k): float(v) for k, v in values.items()} if values else None

    @property
    def has_headline(self) -> bool:
        """Whether the report keeps answered correctly (written since report.py's headline)."""
        return all(self.per_task(m, key="per_task_answered") is not None for m in ("hat", "fixed"))

    @property
    def profile(self) -> dict[str, Any]:
        profile: dict[str, Any] = self.data.get("profile") or {}
        return profile

    @property
    def evaluated(self) -> bool:
        """Whether every evaluation step finished (False: a deadline or a failure cut one;
        True also for a report that keeps no state)."""
        steps = (self.data.get("state") or {}).get("steps")
        if not isinstance(steps, dict):
            return True
        return all((steps.get(f"eval-{m}") or {}).get("status") == "done" for m, _ in MODELS)

    def hv_tasks(self) -> set[str] | None:
        """The HV-QA tasks of fixed SFT and HAT (None: the report keeps none)."""
        found = [self.per_task(m) for m in ("fixed", "hat")]
        if all(f is None for f in found):
            return None
        return {t for f in found if f for t in f}


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


# ----------------------------------------------------------------------------- one experiment


def _without(profile: dict[str, Any], fields: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(profile, default=str))
    for path in fields:
        node: Any = out
        for key in path[:-1]:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(path[-1], None)
    return out


def profile_difference(
    first: dict[str, Any], second: dict[str, Any], *, ignore_seed: bool = True
) -> tuple[str, Any, Any] | None:
    """The first field (dotted, keys in order) where two profiles differ, with both values
    (`(absent)` for a missing one; absent and None agree: a profile written before a field
    existed); None when they agree. The seed's fields are skipped unless `ignore_seed` is
    False; `EXTRA_FIELDS` always are."""
    fields = (*SEED_FIELDS, *EXTRA_FIELDS) if ignore_seed else EXTRA_FIELDS
    a, b = _without(first, fields), _without(second, fields)

    def walk(x: Any, y: Any, where: str) -> tuple[str, Any, Any] | None:
        if isinstance(x, dict) and isinstance(y, dict):
            for key in sorted(set(x) | set(y), key=str):
                found = walk(x.get(key, _ABSENT), y.get(key, _ABSENT), f"{where}.{key}")
                if found:
                    return found
            return None
        if x == y or (x in (None, _ABSENT) and y in (None, _ABSENT)):
            return None  # a field added since (default None) is no difference
        return (where.lstrip("."), x, y)

    return walk(a, b, "")


def check_one_experiment(reports: list[SeedReport]) -> None:
    """SeedsError unless the reports are seeds of one experiment (module doc)."""
    if not reports:
        raise SeedsError("no reports given")
    seen: dict[Path, SeedReport] = {}
    seeds: dict[int, SeedReport] = {}
    for report in reports:
        if report.path.resolve() in seen:
            raise SeedsError(f"{report.path}: given twice (a seed counts once)")
        seen[report.path.resolve()] = report
        if report.seed in seeds:
            raise SeedsError(
                f"seed {report.seed} given twice ({seeds[report.seed].path} and {report.path}): "
                "a seed is one sample of the method and counts once"
            )
        seeds[report.seed] = report
    first = reports[0]
    for other in reports[1:]:
        diff = profile_difference(first.profile, other.profile)
        if diff:
            field, one, two = diff
            raise SeedsError(
                f"not seeds of one experiment: profile field `{field}` is {one!r} in "
                f"{first.path} and {two!r} in {other.path} (only the seed may differ)"
            )
        a, b = first.hv_tasks(), other.hv_tasks()
        if first.evaluated and other.evaluated and a is not None and b is not None and a != b:
            only_a, only_b = sorted(a - b), sorted(b - a)
            raise SeedsError(
                f"not seeds of one experiment: the HV-QA tasks differ: {len(only_a)} only in "
                f"{first.path} ({', '.join(only_a[:3]) or '-'}), {len(only_b)} only in "
                f"{other.path} ({', '.join(only_b[:3]) or '-'})"
            )


# ----------------------------------------------------------------------------- pooling


def _pct(ci: dict[str, Any] | None) -> str:
    if not ci or ci.get("mean") is None:
        return "—"
    text = f"{100 * ci['mean']:.1f}"
    if ci.get("low") is not None and ci.get("high") is not None:
        text += f" [{100 * ci['low']:.1f}, {100 * ci['high']:.1f}]"
    return text


def pooled_difference(reports: list[SeedReport]) -> dict[str, Any]:
    """HAT - fixed-SFT on HV-QA answered correctly over every seed's tasks, paired, tasks
    resampled (module doc). `predates` names the reports that keep no per-task answered
    correctly (left out); `seeds` the seeds pooled; `pairs` 0 when nothing could be pooled."""
    kept = [r for r in reports if r.has_headline]
    out: dict[str, Any] = {
        "measure": "answered correctly",
        "predates": [str(r.path) for r in reports if not r.has_headline],
        "seeds": sorted(r.seed for r in kept),
        "pairs": 0,
    }
    before: list[float] = []
    after: list[float] = []
    groups: list[str] = []
    for report in kept:
        hat = report.per_task("hat", key="per_task_answered") or {}
        fixed = report.per_task("fixed", key="per_task_answered") or {}
        for task in sorted(set(hat) & set(fixed)):
            before.append(fixed[task])
            after.append(hat[task])
            groups.append(task)
    if not groups:
        return out
    ci = paired_bootstrap(before, after, groups=groups)
    out.update(mean=ci.mean, low=ci.low, high=ci.high, pairs=len(groups), tasks=len(set(groups)))
    return out


def pooled_line(pooled: dict[str, Any]) -> str:
    """The pooled report's first line."""
    if pooled.get("pairs"):
        seeds = ", ".join(str(s) for s in pooled["seeds"])
        return (
            f"**HAT − fixed-SFT on HV-QA, answered correctly, pooled over seeds {seeds}: "
            f"{_pct(pooled)} points** (paired by task: {pooled['pairs']} task pairs, "
            f"{pooled['tasks']} tasks resampled with every seed's pair; 95 % bootstrap)."
        )
    if pooled.get("predates") and not pooled.get("seeds"):
        return (
            "**HAT − fixed-SFT on HV-QA, answered correctly, pooled: not computed**: every "
            "report predates per-task answered correctly in report.json."
        )
    return "**HAT − fixed-SFT on HV-QA, answered correctly, pooled: —** (no shared HV-QA task)."


def seeds_markdown(reports: list[SeedReport]) -> str:
    """The pooled line first, then each seed's headline numbers (SeedsError unless the
    reports are seeds of one experiment)."""
    check_one_experiment(reports)
    pooled = pooled_difference(reports)
    lines = [pooled_line(pooled), ""]
    if pooled["predates"]:
        lines += [
            "Left out of the pool: "
            + ", ".join(pooled["predates"])
            + " (written before report.json kept per-task answered correctly; their rows "
            "below show accuracy only).",
            "",
        ]
    lines += [
        "Each seed: answered correctly (accuracy 1 and effectiveness 1) in %, 95 % intervals; "
        "harness-edit error = 1 − answered correctly under the edited harness; accuracy "
        "secondary.",
        "",
        "| seed | model | LS-QA | HV-QA | variant gap (LS − HV) | harness-edit error "
        "| HAT − fixed on HV-QA | LS-QA accuracy | HV-QA accuracy |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for report in sorted(reports, key=lambda r: r.seed):
        new = bool(report.data.get("headline"))
        for name, label in MODELS:
            entry = report.model(name)
            if not entry:
                continue
            ls, hv = entry.get("ls-qa") or {}, entry.get("hv-qa") or {}
            gap = (entry.get("variants") or {}).get("gap") if new else None
            edit = (entry.get("edit") or {}).get("error_after") if new else None
            diff = _pct(entry.get("hv_minus_fixed") if new else None) if name == "hat" else ""
            ls_answered = ls.get("answered") if new else None
            hv_answered = hv.get("answered") if new else None
            lines.append(
                f"| {report.seed} | {label} | {_pct(ls_answered)} "
                f"| {_pct(hv_answered)} | {_pct(gap)} | {_pct(edit)} | {diff} "
                f"| {_pct(ls.get('accuracy'))} | {_pct(hv.get('accuracy'))} |"
            )
    lines += ["", "Reports: " + ", ".join(f"seed {r.seed} `{r.path}`" for r in reports) + "."]
    notes = [r for r in reports if not r.evaluated]
    if notes:
        lines += [
            "",
            "Incomplete evaluation (deadline or failure; paired on the tasks both models ran): "
            + ", ".join(f"seed {r.seed}" for r in notes)
            + ".",
        ]
    return "\n".join(lines) + "\n"


def write_pooled_report(out: Path, reports: list[SeedReport]) -> dict[str, Path]:
    """`<out>/pooled.md` (seeds_markdown) and `<out>/pooled.json` (the pooled numbers)."""
    text = seeds_markdown(reports)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / POOLED_MD, "json": out / POOLED_JSON}
    paths["markdown"].write_text(text, encoding="utf-8")
    data = {
        "pooled": pooled_difference(reports),
        "reports": {str(r.seed): str(r.path) for r in sorted(reports, key=lambda r: r.seed)},
    }
    paths["json"].write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
    return paths


# ----------------------------------------------------------------------------- running seeds


def parse_seeds(words: list[str]) -> list[int]:
    """`--seeds 0 1 2` (or `0,1,2`): the seeds in the order given; SeedsError for a word that
    is not a seed or a seed given twice."""
    seeds: list[int] = []
    for word in (w for text in words for w in text.replace(",", " ").split()):
        if not word.isdigit():
            raise SeedsError(f"--seeds: {word!r} is not a seed (a whole number from 0)")
        if int(word) in seeds:
            raise SeedsError(f"--seeds: seed {int(word)} given twice")
        seeds.append(int(word))
    if not seeds:
        raise SeedsError("--seeds: give at least one seed")
    return seeds


def seed_folder(out: Path, seed: int) -> Path:
    return out / f"seed-{seed}"


def open_seed(
    store: Store, profile: Profile, out: Path, seed: int, *, ifeval_path: str | None = None
) -> tuple[Replication, bool]:
    """Seed `seed`'s replication under `out` and whether it already existed: an existing
    folder is resumed (never started again), refused when its profile is not `profile`
    under that seed (the field named)."""
    from core.experiment.replicate import STATE_FILE, Replication  # heavy: sqlalchemy, alembic

    folder = seed_folder(out, seed)
    wanted = profile.with_seed(seed)
    if not (folder / STATE_FILE).exists():
        return Replication.create(store, wanted, folder, ifeval_path=ifeval_path), False
    run = Replication.open(store, folder)
    diff = profile_difference(
        run.profile.model_dump(mode="json"), wanted.model_dump(mode="json"), ignore_seed=False
    )
    if diff:
        field, have, want = diff
        raise SeedsError(
            f"{folder} holds a replication of another profile: field `{field}` is {have!r} "
            f"there and {want!r} in the one asked; give another --out, or the profile it ran"
        )
    if ifeval_path and not run.ifeval_path:
        run.ifeval_path = run.state["ifeval_path"] = ifeval_path
    return run, True
