"""Which Python runs training and the servers, for the packaged (PyInstaller) app too.

A ground-floor module (only the standard library): the model registry, the engines, the
training launcher and `hat doctor` all ask it, so each asks the same rules.

From a source checkout or a pip install, training children and `transformers serve` run on the
interpreter that runs HAT Studio (`sys.executable`), which has the training extra. A packaged
app has no such interpreter: `sys.executable` is the app itself, and torch is deliberately not
inside the bundle. Training and serving therefore run in a Python environment of their own,
found in this order (the first that is set or exists wins):

1. ``$HAT_TRAINING_PYTHON`` (training, GGUF import) and ``$HAT_TRANSFORMERS_PYTHON``
   (`transformers serve`; defaults to the training interpreter);
2. ``<home>/envs/training/bin/python`` — a virtual environment with
   ``hat-studio[training]`` installed, or a symlink to one (``ln -s ~/venvs/hat
   <home>/envs/training``). A desktop launcher passes no shell variables, so this folder is
   the setting that always works;
3. the vLLM environment has its own rules (`vllm_python`: ``$HAT_VLLM_PYTHON``,
   ``$HAT_VLLM_VENV``, ``<repo>/.venv-vllm``, ``<home>/envs/vllm/bin/python``).

`packaged_defaults()` computes the variables to set; the packaged app's entry point applies
them before anything starts a child process, so every launcher in core (which reads these
variables) picks them up. `hat doctor` reports what was chosen and why.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

TRAINING_VAR = "HAT_TRAINING_PYTHON"
TRANSFORMERS_VAR = "HAT_TRANSFORMERS_PYTHON"
TRAINING_ENV = Path("envs") / "training"


def project_root() -> Path:
    """The folder holding the `core` and `training` packages: training children run there."""
    return Path(__file__).resolve().parents[1]


def training_python() -> str:
    """The interpreter of training and GGUF-import children: $HAT_TRAINING_PYTHON or this
    one (the packaged app sets the variable at start, see the module doc)."""
    return os.environ.get(TRAINING_VAR) or sys.executable


def transformers_python() -> str:
    """The interpreter of `transformers serve` when the engine config names none."""
    return os.environ.get(TRANSFORMERS_VAR) or sys.executable


def vllm_candidates(home: Path) -> list[Path]:
    """Where the vLLM interpreter is looked for, in order."""
    out: list[Path] = []
    if os.environ.get("HAT_VLLM_PYTHON"):
        out.append(Path(os.environ["HAT_VLLM_PYTHON"]))
    if os.environ.get("HAT_VLLM_VENV"):
        out.append(env_python(Path(os.environ["HAT_VLLM_VENV"])))
    out.append(env_python(project_root() / ".venv-vllm"))
    out.append(env_python(home / "envs" / "vllm"))
    return out


def vllm_python(home: Path) -> tuple[Path, bool]:
    """(the vLLM interpreter to use or to report missing, configured explicitly?)."""
    candidates = vllm_candidates(home)
    if os.environ.get("HAT_VLLM_PYTHON") or os.environ.get("HAT_VLLM_VENV"):
        return candidates[0], True
    runnable = (c for c in candidates if c.exists() and os.access(c, os.X_OK))
    return next(runnable, candidates[0]), False


def is_packaged() -> bool:
    """True inside a PyInstaller build (where `sys.executable` is the app, not a Python)."""
    return bool(getattr(sys, "frozen", False))


def env_python(venv: Path) -> Path:
    """The interpreter of the virtual environment `venv`."""
    if os.name == "nt":  # pragma: no cover - the desktop package targets Linux
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def training_env_python(home: Path) -> Path:
    """Where the packaged app looks for the training environment's interpreter."""
    return env_python(home / TRAINING_ENV)


def packaged_defaults(home: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables the packaged app should set (only those not set already).

    Nothing is returned for a variable the user set, nor when `<home>/envs/training` holds no
    interpreter (then `hat doctor` says how to create one).
    """
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    training = env.get(TRAINING_VAR)
    if not training:
        candidate = training_env_python(home)
        if candidate.exists():
            training = str(candidate)
            out[TRAINING_VAR] = training
    if training and not env.get(TRANSFORMERS_VAR):
        out[TRANSFORMERS_VAR] = training
    return out


def apply_packaged_defaults(home: Path) -> dict[str, str]:
    """Set `packaged_defaults(home)` in this process's environment; returns what was set."""
    chosen = packaged_defaults(home)
    os.environ.update(chosen)
    return chosen
