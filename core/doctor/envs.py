"""The checks of the Python environments that training and the model servers run in, and of the
GPU. Each turns a `ProbeResult` (core/doctor/probe.py: what the interpreter itself answered in
a child process) into a report line with the exact fix.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from core.doctor.local import MIN_PYTHON, q
from core.doctor.probe import ProbeResult
from core.doctor.report import GIB, CheckResult, Status
from core.pythons import (
    TRAINING_VAR,
    TRANSFORMERS_VAR,
    is_packaged,
    project_root,
    training_env_python,
    training_python,
    transformers_python,
    vllm_python,
)

TRAINING_MODULES = ["torch", "transformers", "trl", "peft"]
SERVING_MODULES = ["transformers", "fastapi", "uvicorn", "openai"]
SERVE_ENTRY = "transformers.cli.transformers"  # what `ManagedServer` runs with -m


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


def training_python_choice(home: Path) -> tuple[str, str]:
    """(interpreter, why that one) for training children."""
    python = training_python()
    if os.environ.get(TRAINING_VAR):
        return python, _why_set(python, TRAINING_VAR, home)
    return python, _fallback_why()


def transformers_python_choice(home: Path) -> tuple[str, str]:
    python = transformers_python()
    if os.environ.get(TRANSFORMERS_VAR):
        return python, _why_set(python, TRANSFORMERS_VAR, home)
    return python, _fallback_why()


def _why_set(python: str, var: str, home: Path) -> str:
    if is_packaged() and python == str(training_env_python(home)):
        return f"found at {training_env_python(home).parent.parent}"
    return f"${var}"


def _fallback_why() -> str:
    if is_packaged():
        return "the packaged app itself: no training environment found"
    return "the interpreter running hat"


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
            _packaged_env_fix(home)
            if is_packaged()
            else f"export {var}=/path/to/a/python/with/hat-studio[training]   "
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


def training_result(
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


def serving_result(
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
        why = "first of .venv-vllm and <home>/envs/vllm that runs"
    return str(python), explicit, why


def vllm_result(
    python: str,
    explicit: bool,
    why: str,
    result: ProbeResult | None,
    *,
    quick: bool,
    unusable: list[str] | None = None,
) -> CheckResult:
    key, title = "vllm", "Serving (vLLM)"
    setup = "bash scripts/setup-vllm.sh   (or: export HAT_VLLM_PYTHON=/path/to/vllm/python)"
    details = [f"interpreter: {python} ({why})", *(unusable or [])]
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


def gpu_result(result: ProbeResult | None, python: str) -> CheckResult:
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
