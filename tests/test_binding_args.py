"""A harness may rename a tool's parameters (or change a default) while its implementation keeps
its own argument names: `Tool.binding_args` and schema defaults, through the real agent loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core.harness import HarnessError, export_folder, import_folder
from core.harness.folder import folder_files
from core.harness.models import Tool
from core.runtime.trace import ToolCallStep
from tests.runtime_harness import CallLog, build_harness, call, load, make_loop, turn


def renamed_harness():  # type: ignore[no-untyped-def]
    harness = build_harness()
    tools = []
    for tool in harness.tools:
        if tool.name == "check_stock":
            params = {
                "type": "object",
                "properties": {
                    "item_number": {"type": "integer", "minimum": 1},
                    "size": {"type": "string", "enum": ["S", "M", "L"], "default": "M"},
                },
                "required": ["item_number"],
                "additionalProperties": False,
            }
            tool = tool.model_copy(
                update={"parameters": params, "binding_args": {"item_number": "link"}}
            )
            tool = Tool.model_validate(tool.model_dump())
        tools.append(tool)
    return harness.model_copy(update={"tools": tools})


def test_renamed_parameter_and_default_reach_the_binding_in_its_own_names() -> None:
    log = CallLog()
    turns = [
        load("product-qa"),
        turn("", call("check_stock", item_number=3)),
        turn("Link 3 has 12 in M."),
    ]
    loop, _ = make_loop(turns, harness=renamed_harness(), log=log)
    trace = asyncio.run(loop.run("is link 3 in stock?"))
    assert trace.status == "ok", trace.reason
    name, args, _ = log.calls[-1]
    assert name == "check_stock"
    assert args == {"link": 3, "size": "M"}  # renamed back, default filled in
    # The trace keeps what the model wrote; only the binding sees its own names.
    (stock_call,) = [s for s in trace.steps_of(ToolCallStep) if s.name == "check_stock"]
    assert stock_call.arguments == {"item_number": 3}


def test_binding_args_round_trip_through_the_folder(tmp_path: Path) -> None:
    harness = renamed_harness()
    export_folder(harness, tmp_path / "h")
    again = import_folder(tmp_path / "h", trust_python_hooks=True)
    assert again == harness
    assert '"binding_args"' in folder_files(harness)["tools/check_stock.json"]


def test_binding_args_must_name_real_parameters(tmp_path: Path) -> None:
    harness = renamed_harness()
    export_folder(harness, tmp_path / "h")
    path = tmp_path / "h" / "tools" / "check_stock.json"
    path.write_text(path.read_text().replace('"item_number": "link"', '"nope": "link"'))
    with pytest.raises(HarnessError) as info:
        import_folder(tmp_path / "h")
    assert any(p.file == "tools/check_stock.json" for p in info.value.problems)
    assert "nope" in str(info.value)
