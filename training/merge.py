"""`python -m training.merge --base B --adapter A --out O`: fold a LoRA adapter into its base
model and save a plain model folder, for engines that cannot load adapters (transformers
serve). Run as a child by `core.models.merge`; prints one JSON line `{"merged": O}` on success,
the error on stderr and exit status 1 otherwise."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import uuid
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.merge", description=__doc__)
    parser.add_argument("--base", required=True, help="Base model folder or hub id.")
    parser.add_argument("--adapter", required=True, type=Path, help="PEFT adapter folder.")
    parser.add_argument("--out", required=True, type=Path, help="Folder to write (must not exist).")
    args = parser.parse_args(argv)
    out: Path = args.out
    if out.exists():
        print(f"{out} already exists", file=sys.stderr)
        return 1
    # written beside the target, renamed at the end: a killed merge leaves no half folder
    tmp = out.with_name(f".{out.name}-{uuid.uuid4().hex[:8]}")
    try:
        from training.common import merge_adapter

        merge_adapter(args.base, args.adapter, tmp)
        tmp.rename(out)
    except Exception as exc:  # the parent shows this line to the user
        print(f"merge failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"merged": str(out)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
