"""Where the official IFEval prompts are for tests (test data only: never trained on).

They live beside the project (`../shared/data/ifeval/input_data.jsonl`); `$HAT_IFEVAL_FILE`
names another copy. Tests that need them call `require_ifeval()`: without the file they skip
with the reason (a checkout without the shared data cannot run them), and `.ci/run` prints
whether it found the file, so a CI log says which IFEval tests ran.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ifeval_file() -> Path:
    named = os.environ.get("HAT_IFEVAL_FILE")
    if named:
        return Path(named)
    return ROOT.parent / "shared" / "data" / "ifeval" / "input_data.jsonl"


IFEVAL_FILE = ifeval_file()


def require_ifeval() -> Path:
    if not IFEVAL_FILE.is_file():
        pytest.skip(f"the official IFEval prompts are not at {IFEVAL_FILE} (set HAT_IFEVAL_FILE)")
    return IFEVAL_FILE
