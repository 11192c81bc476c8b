"""The Data page's trajectory browser: the JSONL datasets `hat data generate` writes (kept rows
and their `.rejects.jsonl` companion), summarised, filtered and read back one row at a time.

A dataset can hold tens of thousands of rows of several kilobytes each, so the list keeps a
small `RowSummary` per row (what the table and the filters need) and the byte offset of its
line; the full row is read from the file when the row is opened (`read_row`). A line that is
not a JSON object is reported as a problem (file and line) and skipped, never an error that
hides the rest of the file; a torn last line (a job killed mid-write) is ignored the way the
generator's resume ignores it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.datagen.paths import REJECTS_SUFFIX, rejects_of
from studio.logic.data_turns import TurnItem, turns_from_messages, turns_from_trajectory

GRADERS: tuple[tuple[str, str], ...] = (
    ("accuracy", "Accuracy"),
    ("effectiveness", "Effectiveness"),
    ("tool_rationality", "Tool rationality"),
    ("skill_selection", "Skill selection"),
)


def datasets_dir(home: Path) -> Path:
    return Path(home) / "datasets"


@dataclass(frozen=True)
class DatasetFile:
    path: Path
    rows: int
    rejects: int
    modified: datetime

    @property
    def name(self) -> str:
        return self.path.name


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.endswith(b"\n"))


def describe_dataset(path: Path) -> DatasetFile:
    path = Path(path)
    stamp = path.stat().st_mtime if path.exists() else 0.0
    return DatasetFile(
        path,
        _count_lines(path),
        _count_lines(rejects_of(path)),
        datetime.fromtimestamp(stamp, UTC),
    )


def list_datasets(home: Path, extra: list[Path] | None = None) -> list[DatasetFile]:
    """The datasets under `<home>/datasets` (newest first) and any `extra` files opened."""
    root = datasets_dir(home)
    found: dict[Path, None] = {}
    if root.is_dir():
        for path in root.rglob("*.jsonl"):
            if not path.name.endswith(REJECTS_SUFFIX):
                found[path.resolve()] = None
    for path in extra or []:
        if Path(path).exists():
            found[Path(path).resolve()] = None
    files = [describe_dataset(p) for p in found]
    return sorted(files, key=lambda d: (d.modified, d.name), reverse=True)


@dataclass(frozen=True)
class RowSummary:
    """One line of a dataset: what the table shows and the filters test."""

    path: Path
    offset: int
    line: int
    key: str
    task_id: str
    split: str
    category: str
    kept: bool
    variant_index: int
    variant_seed: int | None
    sampler: str
    teacher: str
    scores: dict[str, float] = field(default_factory=dict)
    hook_retry: bool = False
    kept_whole: bool = False
    pruned_turns: int = 0
    rejected: str = ""
    """Why the job was rejected (its kind); '' for kept rows."""
    viewer_message: str = ""

    @property
    def variant_text(self) -> str:
        return "original" if self.variant_index == 0 else f"v{self.variant_index} · {self.sampler}"

    @property
    def mean_score(self) -> float | None:
        return sum(self.scores.values()) / len(self.scores) if self.scores else None


def teacher_text(teacher: dict[str, Any]) -> str:
    kind = str(teacher.get("kind", "?"))
    if kind == "oracle":
        return "oracle"
    model = teacher.get("model")
    return f"{model}" if model else kind


def summarise(data: dict[str, Any], path: Path, offset: int, line: int, kept: bool) -> RowSummary:
    prov = data.get("provenance") or {}
    variant = prov.get("variant") or {}
    grades = data.get("grades") or {}
    scores = {
        name: float(grades[name]["score"])
        for name, _ in GRADERS
        if isinstance(grades.get(name), dict) and "score" in grades[name]
    }
    trajectory = data.get("trajectory") or {}
    return RowSummary(
        path=path,
        offset=offset,
        line=line,
        key=str(data.get("key", "")),
        task_id=str(data.get("task_id", "")),
        split=str(data.get("split", "")),
        category=str(data.get("category", "")),
        kept=kept,
        variant_index=int(variant.get("index") or 0),
        variant_seed=variant.get("seed"),
        sampler=str(variant.get("sampler") or "original"),
        teacher=teacher_text(prov.get("teacher") or {}),
        scores=scores,
        hook_retry=bool(data.get("hook_retry", False)),
        kept_whole=bool(data.get("kept_whole", False)),
        pruned_turns=int(data.get("pruned_turns") or 0),
        rejected=str(data.get("rejected") or ""),
        viewer_message=str(trajectory.get("viewer_message", "")),
    )


@dataclass
class LoadedDataset:
    file: DatasetFile
    rows: list[RowSummary] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """'file:line: why' for every line that was skipped."""

    @property
    def kept(self) -> int:
        return sum(r.kept for r in self.rows)


def _read_summaries(path: Path, kept: bool, out: LoadedDataset) -> None:
    if not path.exists():
        return
    offset = 0
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            start = offset
            offset += len(raw)
            if not raw.endswith(b"\n"):
                break  # torn last line: the generator cuts it on resume
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except (ValueError, RecursionError) as exc:
                out.problems.append(f"{path.name}:{number}: not JSON ({exc})")
                continue
            if not isinstance(data, dict):
                out.problems.append(f"{path.name}:{number}: not a JSON object")
                continue
            try:
                out.rows.append(summarise(data, path, start, number, kept))
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                out.problems.append(f"{path.name}:{number}: not a dataset row ({exc})")


def load_dataset(path: Path, include_rejects: bool = True) -> LoadedDataset:
    """Summaries of every row of `path` (kept) and of its rejects file (rejected)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such dataset")
    out = LoadedDataset(describe_dataset(path))
    _read_summaries(path, True, out)
    if include_rejects:
        _read_summaries(rejects_of(path), False, out)
    return out


def read_row(summary: RowSummary) -> dict[str, Any]:
    """The full row behind a summary (read from its file at the recorded offset)."""
    with summary.path.open("rb") as handle:
        handle.seek(summary.offset)
        raw = handle.readline()
    data = json.loads(raw)
    if not isinstance(data, dict) or str(data.get("key", "")) != summary.key:
        raise ValueError(
            f"{summary.path.name}:{summary.line}: the file changed since it was listed; reload it"
        )
    return data


# ----------------------------------------------------------------------------- filters


@dataclass(frozen=True)
class RowFilter:
    outcome: str = "all"
    """all | kept | rejected"""
    category: str = ""
    split: str = ""
    variant: str = "all"
    """all | original | variants"""
    failing: str = ""
    """A grader name: rows scoring below 1 on it ('' = any)."""
    text: str = ""
    """Case-insensitive match on the key, the viewer message or the teacher."""


def filter_rows(rows: list[RowSummary], f: RowFilter) -> list[RowSummary]:
    needle = f.text.strip().lower()
    out = []
    for row in rows:
        if (f.outcome == "kept" and not row.kept) or (f.outcome == "rejected" and row.kept):
            continue
        if f.category and row.category != f.category:
            continue
        if f.split and row.split != f.split:
            continue
        if f.variant == "original" and row.variant_index != 0:
            continue
        if f.variant == "variants" and row.variant_index == 0:
            continue
        if f.failing and row.scores.get(f.failing, 0.0) >= 1.0:
            continue
        if needle and not (
            needle in row.key.lower()
            or needle in row.viewer_message.lower()
            or needle in row.teacher.lower()
        ):
            continue
        out.append(row)
    return out


def facets(rows: list[RowSummary]) -> dict[str, list[str]]:
    """Values present in the rows, for the filter menus."""
    return {
        "category": sorted({r.category for r in rows if r.category}),
        "split": sorted({r.split for r in rows if r.split}),
    }


# ----------------------------------------------------------------------------- detail


@dataclass
class RowDetail:
    summary: RowSummary
    turns: list[TurnItem]
    grades: list[tuple[str, str, float | None, list[str]]]
    """(key, title, score or None, reasons) per grader."""
    provenance: list[tuple[str, str]]
    reasons: list[str]
    """Why a rejected row was rejected."""
    system_prompt: str
    applied: list[str]
    """HSA transforms the variant applied (empty for the original harness)."""


def row_detail(summary: RowSummary) -> RowDetail:
    data = read_row(summary)
    native = data.get("tool_protocol") == "native"
    messages = data.get("messages") or []
    trajectory = data.get("trajectory") or {}
    tools = data.get("tools") or []
    loader = "load_skill"
    if tools and isinstance(tools[0], dict):
        loader = str((tools[0].get("function") or {}).get("name") or loader)
    if messages:
        turns = turns_from_messages(
            messages,
            viewer_message=trajectory.get("viewer_message"),
            native=native,
            loader=loader,
        )
    elif trajectory:
        turns = turns_from_trajectory(trajectory, loader)
    else:
        turns = []
    grades_raw = data.get("grades") or {}
    grades: list[tuple[str, str, float | None, list[str]]] = []
    for key, title in GRADERS:
        entry = grades_raw.get(key)
        if isinstance(entry, dict):
            grades.append(
                (key, title, float(entry.get("score", 0.0)), list(entry.get("reasons") or []))
            )
        else:
            grades.append((key, title, None, []))
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    prov = data.get("provenance") or {}
    variant = prov.get("variant") or {}
    mapping = variant.get("mapping") or {}
    teacher = prov.get("teacher") or {}
    lines = [
        (
            "Harness",
            f"{prov.get('harness', '?')} @ {(prov.get('harness_version') or 'folder')[:12]}",
        ),
        (
            "Variant",
            "original harness"
            if summary.variant_index == 0
            else f"#{summary.variant_index} · {summary.sampler} · seed {variant.get('seed')}",
        ),
    ]
    policy = mapping.get("policy") if isinstance(mapping, dict) else None
    if isinstance(policy, dict):
        lines.append(("Policy", f"{policy.get('bank', '?')} bank · {policy.get('strength', '?')}"))
    teacher_line = teacher_text(teacher)
    if teacher.get("url"):
        teacher_line += f" at {teacher['url']}"
    if teacher.get("temperature") is not None:
        teacher_line += f" · T={teacher['temperature']:g}"
    lines.append(("Teacher", teacher_line))
    lines.append(("Job seed", str(prov.get("job_seed", ""))))
    lines.append(("Generator", str(prov.get("generator", ""))))
    if summary.hook_retry:
        lines.append(
            (
                "Hook retry",
                "kept whole (fail → reminder → recover)"
                if summary.kept_whole
                else f"pruned {summary.pruned_turns} failed turn(s)",
            )
        )
    applied = list(mapping.get("applied") or []) if isinstance(mapping, dict) else []
    return RowDetail(
        summary=summary,
        turns=turns,
        grades=grades,
        provenance=lines,
        reasons=[str(r) for r in data.get("reasons") or []],
        system_prompt=system,
        applied=applied,
    )
