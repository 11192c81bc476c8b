"""Train's max_length follows the data chosen (#35 item 1): the rows are measured with the
model's own tokenizer and chat template in a training child before a launch, a length that
keeps no reply token is refused with the length that would work (the CLI and the studio's
Start), and the studio's form takes the longest row as its default. The real demo model and
real SFT rows (tests/test_training.py's fixture)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from core.cli.main import app
from core.store import Store
from core.store.training import list_runs
from core.train.measure import RowLengths, measure_rows
from tests.test_training import BASE, demo_folder, rows  # noqa: F401 - rows is a fixture

runner = CliRunner()


def test_rows_are_measured_with_the_models_tokenizer(rows: Path) -> None:  # noqa: F811
    full = measure_rows(demo_folder(), [rows], system_prompt="full")
    compact = measure_rows(demo_folder(), [rows], system_prompt="compact")
    assert full.rows == compact.rows == 4
    assert all(c < f for c, f in zip(compact.lengths, full.lengths, strict=True))
    assert all(0 < start < n for start, n in zip(full.first_reply, full.lengths, strict=True))
    suggestion = full.suggested_max_length()
    assert full.longest <= suggestion < full.longest + 64 and suggestion % 64 == 0
    assert full.problems(suggestion) == ([], [])
    refused, _ = full.problems(min(full.first_reply))
    assert refused and f"set at least {min(full.first_reply) + 1}" in refused[0]
    _, warned = full.problems(full.longest - 1)
    assert warned and "are cut" in warned[0] and f"{suggestion} keeps every row" in warned[0]


def test_bad_rows_are_a_clear_error(tmp_path: Path) -> None:
    from core.train.measure import MeasureError

    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    with pytest.raises(MeasureError) as caught:
        measure_rows(demo_folder(), [bad])
    assert "Traceback" not in str(caught.value) and str(caught.value)


def test_hat_train_sft_refuses_a_length_without_reply_tokens(
    hat_home: Path,
    rows: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    from core.models import add_folder

    with Store.open() as store:
        add_folder(store, BASE, demo_folder())
    config = tmp_path / "sft.yaml"
    config.write_text(yaml.safe_dump({"model": BASE, "data": [str(rows)], "max_length": 32,
                                      "max_steps": 1}))  # fmt: skip
    result = runner.invoke(app, ["train", "sft", "--config", str(config)])
    assert result.exit_code == 1, result.output
    assert "max_length" in result.output and "keeps no reply token" in result.output
    with Store.open() as store:
        assert list_runs(store) == []  # refused before a run folder or row exists


def test_the_suggestion_keeps_every_row_whole() -> None:
    lengths = RowLengths(lengths=(100, 700, 130), first_reply=(80, 650, 90))
    assert lengths.suggested_max_length() == 704
    assert lengths.trainable(640) == 2 and lengths.cut(640) == 1
    refused, warned = lengths.problems(640)
    assert not refused and "1 of 3 rows are longer than 640" in warned[0]
    assert "1 of them lose every reply token" in warned[0]


@pytest.mark.timeout(600)
def test_the_train_form_takes_its_max_length_from_the_data(
    qapp: Any,
    hat_home: Path,
    rows: Path,  # noqa: F811
) -> None:
    from core.models import add_folder
    from tests.studio_helpers import open_studio, shut, wait_until

    with Store.open() as store:
        add_folder(store, BASE, demo_folder())
    expected = measure_rows(demo_folder(), [rows], system_prompt="full").suggested_max_length()
    win = open_studio(hat_home, size=(1440, 900), timeout=120)
    try:
        win.show_page("train")
        page = win.page("train")
        wait_until(lambda: page.env is not None and page.hub.attached, timeout=60)
        form = page.forms["sft"]
        # one row a step: four full-prompt rows in one batch are refused by the launch's
        # memory check on a 24 GiB machine (~35 GiB estimated), which is not under test here
        form.set_values({"model": BASE, "data": str(rows), "system_prompt": "full",
                         "max_steps": 1, "output_name": "measured",
                         "per_device_batch_size": 1})  # fmt: skip
        page.validate()
        wait_until(lambda: str(form.values().get("max_length")) == str(expected), timeout=120)
        wait_until(page.start_button.isEnabled, timeout=120)
        # a length typed by the operator is theirs: refused when it keeps no reply token
        form.set_values({"max_length": 32})
        page.validate()
        wait_until(lambda: "keeps no reply token" in page.check_text.text(), timeout=120)
        assert not page.start_button.isEnabled()
        assert str(form.values().get("max_length")) == "32"
    finally:
        shut(win)
