"""What this machine has, found without torch: CPU flags, usable cores, GPUs.

The ground floor for every question about the hardware: the training configs' `Environment`
(core/train/config.py), the serving engines' CPU dtype and reserved cores
(core/serving/engines.py) and the training child's bf16 choice (training/common.py) ask here,
so they cannot disagree about the same machine. (`hat doctor`'s probe of the training
environment runs in that environment's own interpreter and reports what torch and the driver
see there: a different question.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
"""CPU flags that mean native bf16 matmuls; without them bf16 is emulated and measured here
~20-30x slower than fp32 (AMD EPYC, AVX2 only)."""


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The first CPU's flags in /proc/cpuinfo (or the text given); empty where there is no
    such file (not Linux)."""
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return frozenset()
    line = next((ln for ln in cpuinfo.splitlines() if ln.startswith("flags")), "")
    return frozenset(line.split(":", 1)[1].split()) if ":" in line else frozenset()


def cpu_native_bf16(cpuinfo: str | None = None) -> bool:
    """Whether this CPU multiplies bf16 natively (AMX or AVX512-BF16)."""
    return bool(cpu_flags(cpuinfo) & BF16_FLAGS)


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, which containers narrow), else all."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _nvml_gpus() -> list[str] | None:
    try:
        import pynvml  # nvidia-ml-py, optional
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # no driver
        return []
    try:
        names = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(index))
            names.append(name.decode() if isinstance(name, bytes) else str(name))
        return names
    finally:
        pynvml.nvmlShutdown()


def _smi_gpus() -> list[str]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.startswith("GPU ")]


def gpu_names() -> list[str]:
    """The GPUs this process may use: HAT_GPU_COUNT overrides; else NVML when nvidia-ml-py is
    installed, else `nvidia-smi -L`; narrowed by CUDA_VISIBLE_DEVICES."""
    override = os.environ.get("HAT_GPU_COUNT")
    if override is not None and override.strip().isdigit():
        return [f"GPU {i}" for i in range(int(override))]
    nvml = _nvml_gpus()
    names = nvml if nvml is not None else _smi_gpus()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v for v in visible.split(",") if v.strip() and v.strip() != "-1"]
        names = names[: len(ids)]
    return names


def has_gpu() -> bool:
    """Whether an NVIDIA GPU is usable here (`gpu_names`)."""
    return bool(gpu_names())
