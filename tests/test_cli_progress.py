"""Issue 19, item 15: long CLI jobs report progress when their output is not a terminal."""

from __future__ import annotations

import pytest

from core.cli.common import ProgressLines


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_line_every_n_items_with_rate_and_eta() -> None:
    from rich.console import Console

    out = Console(record=True, width=200, force_terminal=False)
    clock = Clock()
    lines = ProgressLines("eval", out=out, every_items=25, every_s=1e9, clock=clock)
    for done in range(1, 101):
        clock.now = done * 0.5
        lines.update(done, 100)
    text = out.export_text().splitlines()
    assert text[0] == "eval: 25/100 (25%) · 2.00 items/s · ETA 38 s"
    assert len(text) == 4 and text[-1] == "eval: 100/100 (100%) · 2.00 items/s · done in 50 s"


def test_a_line_every_n_seconds_when_items_are_slow() -> None:
    from rich.console import Console

    out = Console(record=True, width=200, force_terminal=False)
    clock = Clock()
    lines = ProgressLines("gen", out=out, every_items=1000, every_s=30, clock=clock)
    for done in range(1, 11):
        clock.now = done * 20.0
        lines.update(done, 10, last="task.x: pass")
    text = out.export_text().splitlines()
    assert text[0].startswith("gen: 2/10 (20%) · 0.05 items/s · ETA 0:02:40 · last task.x")
    assert len(text) == 5 and "done in 0:03:20" in text[-1]


def test_eval_progress_without_a_terminal_prints_lines(capsys: pytest.CaptureFixture[str]) -> None:
    """`hat eval run … > log`: the rich bar drew nothing into the file for the whole run."""
    from core.cli.eval_cmd import _Bar

    with _Bar("eval") as bar:
        for done in range(1, 51):
            bar(done, 50, None)
    err = capsys.readouterr().err
    assert "eval: 25/50 (50%)" in err and "eval: 50/50 (100%)" in err
