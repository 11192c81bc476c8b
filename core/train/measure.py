"""Measure SFT rows in tokens before a launch, and what follows for max_length.

A row longer than `max_length` is cut, and a row cut before its first reply token is dropped;
when every row is dropped the stage fails after it has loaded the model, with an empty curve.
So the launch (the studio's Start, `hat train sft`) measures the rows first, with the model's
own tokenizer and chat template in a training child (training/measure.py: core never imports
the torch stack), derives max_length from the longest row, and refuses a length that leaves no
reply token to train on, saying which length would."""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.pythons import project_root, training_python
from core.train.config import ConfigError, SftConfig

if TYPE_CHECKING:
    from core.store import Store
    from core.train.config import StageConfig

MEASURE_TIMEOUT_S = 300.0
LENGTH_STEP = 64
"""Suggested lengths are rounded up to a multiple of this (a tidy number for the form)."""


class MeasureError(RuntimeError):
    """The rows could not be measured (bad data, a model without a tokenizer, a timeout)."""


@dataclass(frozen=True)
class RowLengths:
    lengths: tuple[int, ...]
    """Tokens per row, prompt and replies, as the SFT stage tokenizes it."""
    first_reply: tuple[int, ...]
    """Index of each row's first trained (reply) token."""
    unreadable: int = 0

    @property
    def rows(self) -> int:
        return len(self.lengths)

    @property
    def longest(self) -> int:
        return max(self.lengths, default=0)

    def cut(self, max_length: int) -> int:
        """Rows longer than `max_length` (their ends are not trained on)."""
        return sum(1 for n in self.lengths if n > max_length)

    def trainable(self, max_length: int) -> int:
        """Rows that keep at least one reply token within `max_length`."""
        return sum(1 for start in self.first_reply if start < max_length)

    def suggested_max_length(self) -> int:
        """The longest row, rounded up to a multiple of LENGTH_STEP: every row whole."""
        return max(LENGTH_STEP, math.ceil(self.longest / LENGTH_STEP) * LENGTH_STEP)

    def problems(self, max_length: int) -> tuple[list[str], list[str]]:
        """(refusals, warnings) for `max_length`, each a "max_length: ..." line."""
        if not self.rows:
            return ["data: no row has a reply to train on"], []
        keep = self.trainable(max_length)
        cut = self.cut(max_length)
        suggestion = self.suggested_max_length()
        if keep == 0:
            need = min(self.first_reply) + 1
            return [
                f"max_length: {max_length} tokens keeps no reply token of any row (the rows' "
                f"prompts alone are {min(self.first_reply)}+ tokens; the longest row is "
                f"{self.longest}): set at least {need}, or {suggestion} to keep every row whole"
            ], []
        warnings = []
        if cut:
            dropped = self.rows - keep
            lost = f", {dropped} of them lose every reply token and are dropped" if dropped else ""
            warnings.append(
                f"max_length: {cut} of {self.rows} rows are longer than {max_length} tokens and "
                f"are cut{lost} (the longest is {self.longest}; {suggestion} keeps every row whole)"
            )
        return [], warnings


def measure_rows(
    model_folder: str | Path,
    data: Sequence[str | Path],
    *,
    system_prompt: str = "full",
    max_rows: int | None = None,
    timeout_s: float = MEASURE_TIMEOUT_S,
) -> RowLengths:
    """The rows of `data` measured with `model_folder`'s tokenizer (module doc)."""
    command = [training_python(), "-m", "training.measure", "--model", str(model_folder),
               "--system-prompt", system_prompt]  # fmt: skip
    if max_rows is not None:
        command += ["--max-rows", str(max_rows)]
    command += [str(p) for p in data]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, cwd=str(project_root()),
            check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise MeasureError(f"measuring the rows took more than {timeout_s:.0f} s") from None
    except OSError as exc:
        raise MeasureError(f"cannot start the measuring process: {exc.strerror}") from None
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
        raise MeasureError(
            lines[-1] if lines else f"the measuring process exited {done.returncode}"
        )
    try:
        data_out = json.loads(done.stdout.strip().splitlines()[-1])
        return RowLengths(
            lengths=tuple(int(n) for n in data_out["lengths"]),
            first_reply=tuple(int(n) for n in data_out["first_reply"]),
            unreadable=int(data_out.get("unreadable", 0)),
        )
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise MeasureError(f"the measuring process printed no result ({exc})") from None


def check_sft_rows(store: Store, config: StageConfig) -> list[str]:
    """The launch's length check for an SFT stage (module doc): ConfigError when max_length
    keeps no reply token of any row, else the warnings (rows cut). Other stages: no check."""
    from core.train.runs import resolve_model  # heavy: sqlalchemy, alembic

    if not isinstance(config, SftConfig) or not config.model or not config.data:
        return []
    folder, _name = resolve_model(store, config.model, field="model")
    if not Path(folder).is_dir():
        return []  # a hub id: measured by the stage itself, where the hub can be reached
    try:
        lengths = measure_rows(folder, config.data, system_prompt=config.system_prompt,
                               max_rows=config.max_rows)  # fmt: skip
    except MeasureError as exc:
        raise ConfigError([("data", str(exc))]) from None
    refusals, warnings = lengths.problems(config.max_length)
    if refusals:
        pairs = [line.split(": ", 1) for line in refusals]
        raise ConfigError([(field, message) for field, message in pairs])
    return warnings
