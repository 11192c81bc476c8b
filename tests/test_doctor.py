"""`hat doctor`: each broken precondition is reported, with its fix, on the real thing.

Every case breaks a real precondition (a read-only or impossible home folder, a database at an
older alembic revision, a demo model folder missing a file, a training interpreter without
torch, an unreachable vLLM interpreter, a free-disk threshold above what the disk has) and
runs the real checks, child-process probes included. The only hand-made inputs are the NVML
answers of `test_gpu_report_*`: this machine has no NVIDIA GPU, so what NVML says on one is
written out there (that test says so).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core import pythons
from core.cli.main import app
from core.doctor import GIB, DoctorOptions, Report, Status
from core.doctor.checks import migrate_database, run_doctor
from core.doctor.envs import gpu_result
from core.doctor.local import check_database, check_home, schema_state
from core.doctor.probe import ProbeResult, probe
from core.models import DEMO_MODEL_NAME, add_folder
from core.store import Store
from core.store.db import alembic_config, head_revision, make_engine, transaction

ROOT = Path(__file__).resolve().parents[1]


def doctor(home: Path, **kwargs: object) -> Report:
    options = DoctorOptions(home=home, quick=bool(kwargs.pop("quick", True)), **kwargs)  # type: ignore[arg-type]
    return run_doctor(options)


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["doctor", *args])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with no packages at all (no pip either: fast to make)."""
    root = tmp_path_factory.mktemp("bare-venv")
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    return pythons.env_python(root)


@pytest.fixture
def db_at_head(hat_home: Path) -> Path:
    with Store.open(hat_home / "hat.db"):
        pass
    return hat_home / "hat.db"


# ----------------------------------------------------------------------------- a healthy setup


def test_healthy_project_environment_passes(hat_home: Path, db_at_head: Path) -> None:
    report = doctor(hat_home)
    assert not report.failed, report.to_json()
    for key in ("python", "home", "database", "training", "serving"):
        assert report.get(key).status is Status.OK, report.get(key)
    assert report.get("database").summary == f"schema at head ({head_revision()})"
    training = report.get("training")
    assert any("torch " in d and "peft " in d for d in training.details), training.details
    # No GPU here: reported as information, never as a failure.
    assert report.get("gpu").status in (Status.INFO, Status.OK)
    assert report.get("demo-model").status is Status.WARN
    assert report.get("demo-model").fix.endswith("hat models add-demo")


def test_cli_json_and_table(hat_home: Path, db_at_head: Path) -> None:
    code, out = cli("--quick", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["ok"] is True and data["home"] == str(hat_home)
    keys = [c["key"] for c in data["checks"]]
    assert keys == [
        "python", "home", "disk", "database", "demo-model", "qt-libs", "training", "serving",
        "vllm", "gpu",
    ]  # fmt: skip
    assert {c["status"] for c in data["checks"]} <= {"ok", "info", "warn"}
    code, out = cli("--quick")
    assert code == 0, out
    assert "Training environment" in out and "How to fix" in out
    assert "hat models add-demo" in out


# ----------------------------------------------------------------------------- home folder


def test_home_that_is_a_file_fails_and_the_command_exits_non_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    monkeypatch.setenv("HAT_HOME", str(home))
    code, out = cli("--quick", "--json")
    assert code == 1, out
    result = {c["key"]: c for c in json.loads(out)["checks"]}["home"]
    assert result["status"] == "fail"
    assert "is a file, not a folder" in result["summary"]
    assert "HAT_HOME" in result["fix"]


def test_home_below_a_file_cannot_be_created(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("x")
    result = check_home(tmp_path / "blocker" / "hat")
    assert result.status is Status.FAIL
    assert "cannot be created" in result.summary and "blocker" in result.summary


def test_missing_home_that_can_be_created_is_information(tmp_path: Path) -> None:
    result = check_home(tmp_path / "new" / "hat")
    assert result.status is Status.INFO
    assert not (tmp_path / "new").exists()  # the doctor creates nothing


_CHECK_HOME = (
    "import json, sys; from pathlib import Path; from core.doctor.local import check_home; "
    "r = check_home(Path(sys.argv[1])); print(json.dumps(r.to_json()))"
)


def test_read_only_home_folder_fails(tmp_path: Path) -> None:
    """chmod 0555 on the home folder. Root ignores permission bits, so as root the check runs
    in a child whose capability bounding set drops DAC override (setpriv), as an ordinary
    user's process would see the folder."""
    home = tmp_path / "ro-home"
    home.mkdir()
    home.chmod(0o555)
    try:
        if os.geteuid() != 0:
            data = check_home(home).to_json()
        else:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv: cannot drop DAC override")
            done = subprocess.run(
                [
                    setpriv,
                    "--bounding-set",
                    "-dac_override,-dac_read_search,-fowner",
                    sys.executable,
                    "-c",
                    _CHECK_HOME,
                    str(home),
                ],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=60,
            )
            if done.returncode != 0 and "setpriv" in done.stderr:
                pytest.skip(f"setpriv cannot drop capabilities here: {done.stderr.strip()}")
            assert done.returncode == 0, done.stderr
            data = json.loads(done.stdout)
    finally:
        home.chmod(0o755)
    assert data["status"] == "fail", data
    assert "not writable" in data["summary"] and "Permission denied" in data["summary"]
    assert f"chmod u+rwx {home}" in data["fix"]


# ----------------------------------------------------------------------------- disk


def test_low_disk_against_a_huge_threshold(hat_home: Path, db_at_head: Path) -> None:
    report = doctor(hat_home, min_free_bytes=10**18, warn_free_bytes=10**18)
    disk = report.get("disk")
    assert disk.status is Status.FAIL and report.failed
    assert "GiB free (at least" in disk.summary and "HAT_HOME" in disk.fix
    free = shutil.disk_usage(hat_home).free
    warn = doctor(hat_home, min_free_bytes=0, warn_free_bytes=free + 100 * GIB).get("disk")
    assert warn.status is Status.WARN
    code, out = cli("--quick", "--json", "--min-free-gb", "1000000000")
    assert code == 1
    assert {c["key"]: c for c in json.loads(out)["checks"]}["disk"]["status"] == "fail"


# ----------------------------------------------------------------------------- database


def _database_at(path: Path, revision: str) -> None:
    engine = make_engine(path)
    try:
        with transaction(engine, path, write=True) as conn:
            from alembic import command

            command.upgrade(alembic_config(conn), revision)
    finally:
        engine.dispose()


def test_database_behind_head_is_reported_and_fixed_by_migrate(hat_home: Path) -> None:
    db = hat_home / "hat.db"
    _database_at(db, "0002")
    result = check_database(hat_home)
    assert result.status is Status.WARN
    assert "migrations pending: schema at 0002" in result.summary
    assert result.fix == "hat doctor --migrate"
    assert schema_state(db).current == ("0002",)  # checking did not migrate
    code, out = cli("--quick", "--migrate")
    assert code == 0, out
    assert f"database migrated from 0002 to {head_revision()}" in out
    assert check_database(hat_home).status is Status.OK
    assert migrate_database(hat_home) == f"database already at schema {head_revision()}"


def test_database_newer_than_the_program_fails(hat_home: Path, db_at_head: Path) -> None:
    import sqlite3

    with sqlite3.connect(db_at_head) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    result = check_database(hat_home)
    assert result.status is Status.FAIL
    assert "schema 9999 is newer than this program" in result.summary


def test_file_that_is_not_a_database_fails(hat_home: Path) -> None:
    (hat_home / "hat.db").write_bytes(b"this is not sqlite" * 10)
    result = check_database(hat_home)
    assert result.status is Status.FAIL
    assert "not a HAT database" in result.summary and "hat.db.broken" in result.fix


def test_no_database_yet_is_information(hat_home: Path) -> None:
    result = check_database(hat_home)
    assert result.status is Status.INFO and "first use" in result.summary
    assert not (hat_home / "hat.db").exists()


# ----------------------------------------------------------------------------- demo model


def _linked_copy(src: Path, dst: Path) -> Path:
    """The demo folder as hard links (free), or copied where links are impossible."""
    try:
        shutil.copytree(src, dst, copy_function=os.link)
    except OSError:
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize(
    ("removed", "message"),
    [("tokenizer.json", "missing tokenizer.json"), ("model.safetensors", "no weights")],
)
def test_demo_model_folder_missing_a_file_fails(
    hat_home: Path, demo_model_folder: Path, tmp_path: Path, removed: str, message: str
) -> None:
    folder = _linked_copy(demo_model_folder, tmp_path / "demo-copy")
    with Store.open(hat_home / "hat.db") as store:
        add_folder(store, DEMO_MODEL_NAME, folder)
    assert doctor(hat_home).get("demo-model").status is Status.OK
    assert (folder / removed).exists(), sorted(p.name for p in folder.iterdir())
    (folder / removed).unlink()
    result = doctor(hat_home).get("demo-model")
    assert result.status is Status.FAIL
    assert "registered but its folder is broken" in result.summary and message in result.summary
    assert result.fix.startswith("hat models add-demo")


# ----------------------------------------------------------------------------- environments


def test_training_python_without_torch_fails(
    hat_home: Path, db_at_head: Path, bare_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Full import mode: the bare interpreter fails every import at once (fast)."""
    monkeypatch.setenv("HAT_TRAINING_PYTHON", str(bare_python))
    monkeypatch.setenv("HAT_TRANSFORMERS_PYTHON", str(bare_python))
    monkeypatch.setenv("HAT_VLLM_PYTHON", str(bare_python))  # importing vllm takes ~30 s
    report = doctor(hat_home, quick=False)
    training = report.get("training")
    assert training.status is Status.FAIL and report.failed
    assert training.summary == "torch, transformers, trl, peft cannot be imported"
    assert any("No module named 'torch'" in d for d in training.details)
    assert training.fix.startswith(f"{bare_python} -m pip install")
    assert "[training]" in training.fix
    serving = report.get("serving")
    assert serving.status is Status.FAIL and "fastapi" in serving.summary
    assert "transformers[serving]" in serving.fix
    # NVML is asked through the training interpreter, which lacks nvidia-ml-py: not an error.
    assert report.get("gpu").status in (Status.INFO, Status.WARN)
    code, _ = cli("--quick", "--json")
    assert code == 1


def test_training_python_that_does_not_exist_fails(
    hat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere" / "python"
    monkeypatch.setenv("HAT_TRAINING_PYTHON", str(missing))
    result = doctor(hat_home).get("training")
    assert result.status is Status.FAIL
    assert result.summary == f"no such interpreter: {missing}"
    assert "HAT_TRAINING_PYTHON" in result.fix


@pytest.mark.parametrize("how", ["python", "venv"])
def test_unreachable_vllm_python_fails(
    hat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "python":
        monkeypatch.setenv("HAT_VLLM_PYTHON", str(tmp_path / "no-vllm" / "python"))
    else:
        monkeypatch.setenv("HAT_VLLM_VENV", str(tmp_path / "no-venv"))
    result = doctor(hat_home).get("vllm")
    assert result.status is Status.FAIL
    assert "configured but unusable: no such interpreter" in result.summary
    assert "setup-vllm.sh" in result.fix


def test_vllm_python_without_vllm_fails(
    hat_home: Path, bare_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAT_VLLM_PYTHON", str(bare_python))
    result = doctor(hat_home).get("vllm")
    assert result.status is Status.FAIL
    assert result.summary == "vllm cannot be found there"


def test_probe_survives_a_child_that_prints_nothing_useful(tmp_path: Path) -> None:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho 'garbage'\necho 'boom' >&2\nexit 3\n")
    script.chmod(0o755)
    result = probe(str(script), ["torch"], quick=True, timeout_s=30)
    assert result.error == f"{script} could not run the check (exit status 3): boom"
    hang = tmp_path / "hang"
    hang.write_text("#!/bin/sh\nsleep 30\n")
    hang.chmod(0o755)
    slow = probe(str(hang), ["torch"], quick=True, timeout_s=0.5)
    assert slow.error == f"{hang} did not answer within 0.5 s"


@pytest.mark.slow
def test_full_import_probe_of_the_project_environment(
    hat_home: Path, db_at_head: Path, bare_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default mode imports torch, transformers, TRL, PEFT and the serve entry point (the
    vLLM probe is pointed at a bare interpreter: importing vllm alone takes ~30 s)."""
    monkeypatch.setenv("HAT_VLLM_PYTHON", str(bare_python))
    report = doctor(hat_home, quick=False)
    training, serving = report.get("training"), report.get("serving")
    assert training.status is Status.OK, training
    assert serving.status is Status.OK, serving
    assert "import OK" in training.summary
    assert any("transformers.cli.transformers" in d for d in serving.details), serving.details


# ----------------------------------------------------------------------------- interpreter rules


@pytest.mark.parametrize(
    ("env", "transformers", "vllm"),
    [
        ({}, None, None),
        ({"HAT_TRAINING_PYTHON": "/opt/t/python"}, None, None),
        ({"HAT_TRANSFORMERS_PYTHON": "/opt/s/python"}, "/opt/s/python", None),
        ({"HAT_VLLM_VENV": "/opt/vv"}, None, "/opt/vv/bin/python"),
        ({"HAT_VLLM_PYTHON": "/opt/v/python", "HAT_VLLM_VENV": "/opt/vv"}, None, "/opt/v/python"),
    ],
)
def test_the_launchers_follow_the_interpreter_rules(
    hat_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    transformers: str | None,
    vllm: str | None,
) -> None:
    """What the serving launcher starts is what `hat doctor` reports (both ask
    `core.pythons`): an explicit variable wins; without one, transformers serve runs on this
    interpreter and vLLM on the first environment that exists (the repository's .venv-vllm,
    then <home>/envs/vllm), or is reported missing at the repository's."""
    from core.serving.engines import default_python

    for var in ("HAT_TRAINING_PYTHON", "HAT_TRANSFORMERS_PYTHON", "HAT_VLLM_PYTHON"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("HAT_VLLM_VENV", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert default_python("transformers") == (transformers or sys.executable)
    repo_vllm = pythons.env_python(pythons.project_root() / ".venv-vllm")
    home_vllm = pythons.env_python(hat_home / "envs" / "vllm")
    found = next((p for p in (repo_vllm, home_vllm) if p.exists()), repo_vllm)
    assert default_python("vllm") == (vllm or str(found))
    assert str(pythons.vllm_python(hat_home)[0]) == default_python("vllm")
    assert pythons.vllm_python(hat_home)[1] is (vllm is not None)


def test_a_packaged_app_keeps_its_folder_off_the_training_childs_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from core.train.runs import child_env

    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert child_env()["PYTHONPATH"] == str(pythons.project_root())
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert "PYTHONPATH" not in child_env()


def test_packaged_defaults_find_the_training_environment(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert pythons.packaged_defaults(home, {}) == {}
    python = pythons.training_env_python(home)
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    assert pythons.packaged_defaults(home, {}) == {
        "HAT_TRAINING_PYTHON": str(python),
        "HAT_TRANSFORMERS_PYTHON": str(python),
    }
    # What the user set wins; serving follows the user's training interpreter.
    chosen = pythons.packaged_defaults(home, {"HAT_TRAINING_PYTHON": "/u/python"})
    assert chosen == {"HAT_TRANSFORMERS_PYTHON": "/u/python"}
    both = {"HAT_TRAINING_PYTHON": "/u/python", "HAT_TRANSFORMERS_PYTHON": "/s/python"}
    assert pythons.packaged_defaults(home, both) == {}


# ----------------------------------------------------------------------------- GPU


def _nvml(nvml: dict[str, object], torch_cuda: dict[str, object] | None = None) -> ProbeResult:
    return ProbeResult("/env/python", nvml=nvml, torch_cuda=torch_cuda)


_H200 = {
    "available": True,
    "driver": "570.86",
    "cuda": "12.8",
    "devices": [{"index": 0, "name": "NVIDIA H200", "memory_total": 141 * GIB, "memory_used": 0}],
}


def test_gpu_report_from_nvml_answers() -> None:
    """Hand-written NVML answers: this machine has no NVIDIA GPU, so what the probe returns on
    one (same keys as `PROBE` prints) is written out here."""
    ok = gpu_result(_nvml(_H200, {"built": "12.8", "available": True}), "/env/python")
    assert ok.status is Status.OK
    assert ok.summary == "1 GPU(s), driver 570.86, CUDA 12.8"
    assert ok.details[0] == "GPU 0: NVIDIA H200, 141 GiB (0.0 GiB used)"
    cpu_torch = gpu_result(_nvml(_H200, {"built": None, "available": False}), "/env/python")
    assert cpu_torch.status is Status.WARN and "CPU build" in cpu_torch.summary
    assert cpu_torch.fix.startswith("/env/python -m pip install --force-reinstall")
    no_driver = _nvml({"available": False, "reason": "no-driver", "error": "NVMLError"})
    assert gpu_result(no_driver, "/env/python").status is Status.INFO


def test_gpu_on_this_machine_is_never_a_failure(hat_home: Path) -> None:
    """The real NVML probe through this interpreter (nvidia-ml-py is in the training extra)."""
    result = probe(sys.executable, [], quick=True, nvml=True, timeout_s=60)
    assert result.nvml is not None
    gpu = gpu_result(result, sys.executable)
    if shutil.which("nvidia-smi") is None:
        assert gpu.status is Status.INFO and gpu.summary.startswith("CPU only")
    else:  # pragma: no cover - GPU machines
        assert gpu.status in (Status.OK, Status.WARN)


def test_a_broken_first_vllm_environment_does_not_hide_a_working_one(
    hat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#34 B15: doctor tries every vLLM candidate in order, not only the first that exists:
    a .venv-vllm whose interpreter cannot run is reported and <home>/envs/vllm is used."""
    real = pythons.env_python(pythons.project_root() / ".venv-vllm")
    if not real.exists():
        pytest.skip("no vLLM environment on this machine (scripts/setup-vllm.sh makes one)")
    monkeypatch.delenv("HAT_VLLM_PYTHON", raising=False)
    monkeypatch.delenv("HAT_VLLM_VENV", raising=False)
    fake_root = tmp_path / "project"
    broken = pythons.env_python(fake_root / ".venv-vllm")
    broken.parent.mkdir(parents=True)
    broken.write_text("#!/bin/sh\nkill -SEGV $$\n")
    broken.chmod(0o755)
    (hat_home / "envs").mkdir(parents=True, exist_ok=True)
    (hat_home / "envs" / "vllm").symlink_to(pythons.project_root() / ".venv-vllm")
    working = pythons.env_python(hat_home / "envs" / "vllm")
    monkeypatch.setattr(pythons, "project_root", lambda: fake_root)
    result = doctor(hat_home).get("vllm")
    assert result.status is Status.OK, (result.summary, result.details)
    assert f"interpreter: {working}" in result.details[0]
    assert any(str(broken) in d and "could not run" in d for d in result.details)
