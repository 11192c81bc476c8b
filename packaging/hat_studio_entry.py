"""Entry point of the packaged HAT Studio (PyInstaller one-folder build, packaging/hat-studio.spec).

One executable plays three parts, chosen before anything heavy is imported:

* `hat-studio [--home F] [--theme T] [--smoke]`: the desktop application (studio.app.main);
* `hat ...` (a symlink named `hat` next to the executable; build.sh makes it): the command line;
* `hat-studio [-I] -c CODE ...` / `hat-studio -m core.train.orchestrate ...`: what core starts
  with `sys.executable` as if it were a Python (Python hooks run `sys.executable -I -c RUNNER`;
  a detached pipeline runs `sys.executable -m core.train.orchestrate`). Inside the bundle
  `sys.executable` is this program, so it answers those the way Python would. Modules outside
  the bundle (`python -m training`, `transformers serve`) are refused with a message that says
  where they run instead: the training environment (core/pythons.py).

Before the studio or the CLI starts, the training/serving interpreters are chosen
(`apply_packaged_defaults`): $HAT_TRAINING_PYTHON / $HAT_TRANSFORMERS_PYTHON when set, else
`<home>/envs/training/bin/python` when it exists.
"""

from __future__ import annotations

import os
import sys

# Flags Python accepts before -c/-m that core passes (isolated mode, unbuffered, ...): they
# have no meaning for the frozen interpreter, whose sys.path is fixed at build time.
_PYTHON_FLAGS = {"-I", "-u", "-E", "-s", "-S", "-B", "-O", "-OO"}
_BUNDLED = ("core", "studio")


def _home_from(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg == "--home" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--home="):
            return arg.split("=", 1)[1]
    return None


def _apply_defaults(argv: list[str]) -> None:
    from pathlib import Path

    from core.doctor.local import default_home
    from core.pythons import apply_packaged_defaults, is_packaged

    if not is_packaged():
        return
    home = _home_from(argv)
    apply_packaged_defaults(Path(home).expanduser() if home else default_home())


def python_like(argv: list[str]) -> int | None:
    """Run `-c CODE` / `-m MODULE` like Python would; None when argv is not such a call."""
    args = list(argv)
    while args and args[0] in _PYTHON_FLAGS:
        args.pop(0)
    if len(args) < 2 or args[0] not in ("-c", "-m"):
        return None
    if args[0] == "-c":
        sys.argv = ["-c", *args[2:]]
        namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        exec(compile(args[1], "<string>", "exec"), namespace)
        return 0
    module = args[1]
    if module.split(".")[0] not in _BUNDLED:
        print(
            f"hat-studio: `python -m {module}` does not run inside the packaged app: training "
            "and model servers run in their own Python environment. Create one at "
            "<home>/envs/training (python3 -m venv ... && pip install 'hat-studio[training]') "
            "or set HAT_TRAINING_PYTHON / HAT_TRANSFORMERS_PYTHON; `hat doctor` checks it.",
            file=sys.stderr,
        )
        return 2
    import runpy

    sys.argv = [module, *args[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    answered = python_like(args)
    if answered is not None:
        return answered
    _apply_defaults(args)
    if os.path.basename(sys.argv[0]) in ("hat", "hat.exe"):
        from core.cli.main import app

        app(args=args, prog_name="hat")
        return 0
    from studio.app import main as studio_main

    return studio_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
