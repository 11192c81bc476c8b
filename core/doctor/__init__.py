"""`hat doctor`: is this machine ready to run HAT Studio, and if not, what exactly to do.

    from core.doctor.checks import default_home, run_doctor
    report = run_doctor(DoctorOptions(home=default_home()))
    for result in report.results: print(result.status.name, result.title, result.fix)

Checks: this Python; the home folder (writable) and its free disk; the database (at the
alembic head, or migrations pending); the embedded demo model (registered, folder complete);
the training environment and `transformers serve` (probed in child processes: core never imports
torch); the vLLM environment when there is one; the GPU through NVML (CPU-only is information,
not an error). Where each Python environment is found is `core.pythons`, which the doctor
reports and the launchers use.

The package itself imports only the report types, so the packaged app's entry point can use
`local.default_home` without loading the checks (SQLAlchemy, alembic) at start.
"""

from core.doctor.report import GIB, CheckResult, DoctorOptions, Report, Status

__all__ = [
    "GIB",
    "CheckResult",
    "DoctorOptions",
    "Report",
    "Status",
]
