"""A registered adapter as a plain model, merged on first use.

vLLM serves LoRA adapters directly; transformers serve cannot (it needs a full model folder).
So that an adapter is servable whatever the engine, `merged_model` folds it into its base in a
training child (`python -m training.merge`: peft and torch live only there) the first time it
is asked for, registers the result as a managed `merged` model (`<adapter>-merged`, meta
`adapter`), and returns that record every later time.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from core.models.grouping import merge_source
from core.models.registry import RegistryError, free_model_folder, get, register_merged
from core.pythons import training_python
from core.store import Store
from core.store.serving import ModelRecord, list_models

MERGE_TIMEOUT_S = 1800.0


def existing_merge(store: Store, adapter: ModelRecord) -> ModelRecord | None:
    """A usable merged model of `adapter`: one merged on demand, or the one its training run
    registered (`<adapter>-merged` on the same base)."""
    mine = {adapter.name: adapter}
    for record in list_models(store):
        if merge_source(record, mine) == adapter.name and Path(record.location).is_dir():
            return record
    return None


def merged_model(
    store: Store,
    adapter_name: str,
    *,
    python: str | None = None,
    on_phase: Callable[[str], None] | None = None,
    timeout_s: float = MERGE_TIMEOUT_S,
) -> ModelRecord:
    """The merged model of the registered adapter `adapter_name`, merging it if needed."""
    adapter = get(store, adapter_name)
    if adapter.kind != "adapter" or not adapter.base:
        raise RegistryError(f"{adapter_name!r} is a {adapter.kind} model, not an adapter")
    found = existing_merge(store, adapter)
    if found is not None:
        return found
    base = get(store, adapter.base)
    name = f"{adapter.name}-merged"
    out = free_model_folder(name)
    if on_phase is not None:
        on_phase("Merging the adapter into its base")
    argv = [python or training_python(), "-m", "training.merge", "--base", base.location,
            "--adapter", adapter.location, "--out", str(out)]  # fmt: skip
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise RegistryError(
            f"merging {adapter.name!r} took longer than {timeout_s:g} s", kind="failed"
        ) from None
    except OSError as exc:
        raise RegistryError(f"cannot start the merge ({argv[0]}): {exc}", kind="failed") from None
    if proc.returncode != 0 or not out.is_dir():
        tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
        hint = ""
        if "No module named" in tail:
            hint = "\n(merging needs the training extra: pip install -e '.[training]')"
        raise RegistryError(f"merging {adapter.name!r} failed:\n{tail}{hint}", kind="failed")
    meta = {"adapter": adapter.name, "merged_on_demand": True}
    try:
        return register_merged(store, name, out, base=base.name, managed=True, meta=meta)
    except RegistryError:
        shutil.rmtree(out, ignore_errors=True)
        raise
