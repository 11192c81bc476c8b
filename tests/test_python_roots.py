"""Python-bound tools of an imported folder are found without PYTHONPATH, a missing module
says where it was looked for, and `hat harness bind` binds an imported tool without
hand-editing JSON (#34 A5). Real folders and packages on disk, the real CLI and agent loop."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli.main import app
from core.harness.folder import import_folder

runner = CliRunner()

TOOL = {
    "name": "get_order",
    "description": "An order by id.",
    "inputSchema": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
}


def _layout(tmp_path: Path, package: str) -> Path:
    """<root>/<package>/tools.py beside <root>/harness/, as a published agent ships them."""
    root = tmp_path / "retail"
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text("")
    (root / package / "tools.py").write_text(
        "def get_order(order_id):\n    return {'order_id': order_id, 'total': 47.5}\n"
    )
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": [TOOL]}))
    result = runner.invoke(
        app, ["harness", "import-tools", str(tools), "--into", str(root / "harness")]
    )
    assert result.exit_code == 0, result.output
    return root / "harness"


def test_bind_then_validate_finds_the_package_beside_the_harness(tmp_path: Path) -> None:
    package = "retail_shop_roots_a"
    harness = _layout(tmp_path, package)
    unbound = runner.invoke(app, ["harness", "validate", str(harness)])
    assert unbound.exit_code == 1 and "has no implementation" in unbound.output
    assert not any(package in p for p in sys.path)
    bound = runner.invoke(
        app, ["harness", "bind", str(harness), "get_order", f"python:{package}.tools:get_order",
              "--trust"],
    )  # fmt: skip
    assert bound.exit_code == 0, bound.output
    data = json.loads((harness / "tools" / "get_order.json").read_text())
    assert data["x-hat"]["binding"] == f"python:{package}.tools:get_order"
    # a new process, no PYTHONPATH: the package beside the harness is found all the same
    import os
    import shutil
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    hat = shutil.which("hat") or "hat"
    ok = subprocess.run(
        [hat, "harness", "validate", str(harness), "--trust"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert import_folder(harness).tools[0].binding.endswith(":get_order")


def test_a_module_that_is_nowhere_says_where_it_was_looked_for(tmp_path: Path) -> None:
    harness = _layout(tmp_path, "retail_shop_roots_b")
    result = runner.invoke(
        app, ["harness", "bind", str(harness), "get_order", "python:no_such_pkg.tools:get_order",
              "--trust"],
    )  # fmt: skip
    assert result.exit_code == 1
    said = " ".join(result.output.split())
    assert "module no_such_pkg.tools not found" in said
    assert str(harness.resolve().parent) in result.output.replace("\n", "")
    assert "nothing was written" in result.output
    assert (
        "has no implementation" in runner.invoke(app, ["harness", "validate", str(harness)]).output
    )  # the file is as it was


@pytest.mark.parametrize(
    ("binding", "why"),
    [("python:bad module:f", "python:<module>:<function>"), ("sim.get_order", "give python"),
     ("ftp://x", "give python"), ("mcp:srv", "mcp:<server>/<tool>")],
)  # fmt: skip
def test_a_malformed_binding_is_refused_and_nothing_written(
    tmp_path: Path, binding: str, why: str
) -> None:
    harness = _layout(tmp_path, "retail_shop_roots_c")
    before = (harness / "tools" / "get_order.json").read_bytes()
    result = runner.invoke(app, ["harness", "bind", str(harness), "get_order", binding])
    assert result.exit_code == 1 and why in result.output
    assert (harness / "tools" / "get_order.json").read_bytes() == before
    unknown = runner.invoke(app, ["harness", "bind", str(harness), "nope", "mcp:a/b"])
    assert unknown.exit_code == 1 and "no tool 'nope'" in unknown.output
