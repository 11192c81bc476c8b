"""The `hat` command line. Sub-apps live in their own modules, one per area."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from core.cli import (
    bench_cmd,
    chat_cmd,
    common,
    data_cmd,
    doctor_cmd,
    eval_cmd,
    experiment_cmd,
    harness_cmd,
    hsa_cmd,
    models_cmd,
    serve_cmd,
    sim_cmd,
    train_cmd,
)


class _HatGroup(TyperGroup):
    """The top command group: a file or folder the user named that the system refuses (a
    parent that is a file, no permission, a full disk) ends as one line naming the path,
    whichever command met it, instead of a traceback."""

    def invoke(self, ctx: Any) -> Any:  # (typer's own vendored click Context)
        try:
            return super().invoke(ctx)
        except OSError as exc:
            common.fail(common.describe_os_error(exc))


app = typer.Typer(
    name="hat",
    cls=_HatGroup,
    help="HAT Studio: harness-aware training for compact agent models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(harness_cmd.app, name="harness")
app.add_typer(sim_cmd.app, name="sim")
app.add_typer(models_cmd.app, name="models")
app.add_typer(serve_cmd.app, name="serve")
app.add_typer(chat_cmd.app, name="chat")
app.add_typer(bench_cmd.app, name="bench")
app.add_typer(data_cmd.app, name="data")
app.add_typer(train_cmd.app, name="train")
app.add_typer(hsa_cmd.app, name="hsa")
app.add_typer(doctor_cmd.app, name="doctor")
app.add_typer(eval_cmd.app, name="eval")
app.add_typer(experiment_cmd.app, name="experiment")


if __name__ == "__main__":
    app()
