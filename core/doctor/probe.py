"""Look inside another Python environment without importing its packages here.

The training stack (torch, transformers, TRL, PEFT) and the serving engines live in Python
environments of their own (core never imports them; vLLM even pins a conflicting torch). The
only faithful way to know whether they work is to ask that interpreter: `probe()` starts it
with a small stdlib-only script (`PROBE`), which imports (or, when `quick`, only locates) the
named modules one by one, reads their versions, optionally asks NVML about GPUs, and prints
one JSON line. Everything the child can get wrong (missing interpreter, a crash, a hang, garbage
on stdout) becomes a `ProbeResult` with `error` set; `probe()` never raises.

The child runs the way training children are launched (core/train/runs.py): working directory
and PYTHONPATH at the project root, so "is `training` importable" gets the same answer it would
get for a real run.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.exits import exit_words

PROBE = r"""
import importlib, importlib.util, json, sys, time
from importlib import metadata

def _first_line(exc):
    text = ("%s: %s" % (type(exc).__name__, exc)).strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__

def _version(name, module, dists):
    version = getattr(module, "__version__", None) if module is not None else None
    if isinstance(version, str):
        return version
    for dist in dists.get(name.split(".")[0], [name.split(".")[0]]):
        try:
            return metadata.version(dist)
        except Exception:
            pass
    return None

def _nvml():
    try:
        import pynvml
    except Exception as exc:
        return {"available": False, "reason": "no-module", "error": _first_line(exc)}
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        return {"available": False, "reason": "no-driver", "error": _first_line(exc)}
    try:
        def text(value):
            return value.decode() if isinstance(value, bytes) else str(value)
        out = {"available": True, "driver": text(pynvml.nvmlSystemGetDriverVersion()),
               "devices": []}
        try:
            cuda = pynvml.nvmlSystemGetCudaDriverVersion()
            out["cuda"] = "%d.%d" % (cuda // 1000, (cuda % 1000) // 10)
        except Exception:
            pass
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            out["devices"].append({"index": i, "name": text(pynvml.nvmlDeviceGetName(handle)),
                                   "memory_total": int(memory.total),
                                   "memory_used": int(memory.used)})
        return out
    except Exception as exc:
        return {"available": False, "reason": "error", "error": _first_line(exc)}
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass

def main():
    spec = json.loads(sys.argv[1])
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # imports that print must not corrupt the answer line
    out = {"python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable,
           "prefix": sys.prefix, "modules": {}}
    for name in spec["modules"]:
        started = time.monotonic()
        entry = {}
        module = None
        try:
            if spec["import"]:
                module = importlib.import_module(name)
            elif importlib.util.find_spec(name) is None:
                raise ModuleNotFoundError("No module named %r" % name)
            entry["ok"] = True
            entry["version"] = _version(name, module, spec.get("dists", {}))
        except BaseException as exc:
            entry = {"ok": False, "error": _first_line(exc)}
        entry["seconds"] = round(time.monotonic() - started, 3)
        out["modules"][name] = entry
    # torch was imported (or not) by the loop above, in this child only; read it from there.
    torch = sys.modules.get("torch")
    if spec.get("torch_cuda") and torch is not None:
        try:
            out["torch_cuda"] = {"built": torch.version.cuda,
                                 "available": bool(torch.cuda.is_available())}
        except Exception as exc:
            out["torch_cuda"] = {"error": _first_line(exc)}
    if spec.get("nvml"):
        out["nvml"] = _nvml()
    real_stdout.write("\n" + json.dumps(out) + "\n")
    real_stdout.flush()

main()
"""


@dataclass(frozen=True)
class ModuleState:
    ok: bool
    version: str | None = None
    error: str | None = None
    seconds: float = 0.0


@dataclass
class ProbeResult:
    """What the child said, or why it could not say anything (`error`)."""

    python: str
    error: str | None = None
    version: str | None = None
    executable: str | None = None
    modules: dict[str, ModuleState] = field(default_factory=dict)
    nvml: dict[str, Any] | None = None
    torch_cuda: dict[str, Any] | None = None
    seconds: float = 0.0
    stderr_tail: list[str] = field(default_factory=list)

    def missing(self, names: list[str]) -> list[str]:
        """The names in `names` that did not import (or were not probed)."""
        return [n for n in names if not (n in self.modules and self.modules[n].ok)]

    def versions(self, names: list[str]) -> str:
        parts = []
        for name in names:
            state = self.modules.get(name)
            if state is not None and state.ok:
                parts.append(f"{name} {state.version or '?'}")
        return ", ".join(parts)


def probe(
    python: str,
    modules: list[str],
    *,
    quick: bool,
    cwd: Path | None = None,
    timeout_s: float = 240.0,
    nvml: bool = False,
    torch_cuda: bool = False,
    dists: dict[str, list[str]] | None = None,
) -> ProbeResult:
    """Ask the interpreter `python` about `modules` (see the module doc). Never raises."""

    path = Path(python)
    if not path.exists():
        return ProbeResult(python, error=f"no such interpreter: {python}")
    if path.is_dir():
        return ProbeResult(python, error=f"{python} is a folder, not a Python interpreter")
    if not os.access(path, os.X_OK):
        return ProbeResult(python, error=f"{python} is not executable")
    spec = {
        "modules": modules,
        "import": not quick,
        "nvml": nvml,
        "torch_cuda": torch_cuda,
        "dists": dists or {},
    }
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    if cwd is not None:
        env["PYTHONPATH"] = str(cwd) + (
            os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
        )
    started = time.monotonic()
    try:
        done = subprocess.run(
            [python, "-c", PROBE, json.dumps(spec)],
            capture_output=True,
            text=True,
            cwd=str(cwd) if cwd is not None else None,
            env=env,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return ProbeResult(
            python,
            error=f"{python} did not answer within {timeout_s:g} s",
            seconds=time.monotonic() - started,
        )
    except OSError as exc:
        return ProbeResult(python, error=f"cannot start {python}: {exc.strerror or exc}")
    seconds = time.monotonic() - started
    tail = [line for line in done.stderr.strip().splitlines() if line.strip()][-8:]
    answer = _last_json_line(done.stdout)
    if answer is None:
        why = exit_words(done.returncode) if done.returncode else "no answer"
        return ProbeResult(
            python,
            error=f"{python} could not run the check ({why})"
            + (f": {tail[-1][:300]}" if tail else ""),
            seconds=seconds,
            stderr_tail=tail,
        )
    states = {
        name: ModuleState(
            ok=bool(entry.get("ok")),
            version=entry.get("version"),
            error=entry.get("error"),
            seconds=float(entry.get("seconds") or 0.0),
        )
        for name, entry in (answer.get("modules") or {}).items()
        if isinstance(entry, dict)
    }
    return ProbeResult(
        python,
        version=answer.get("python"),
        executable=answer.get("executable"),
        modules=states,
        nvml=answer.get("nvml"),
        torch_cuda=answer.get("torch_cuda"),
        seconds=seconds,
        stderr_tail=tail,
    )


def _last_json_line(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None
