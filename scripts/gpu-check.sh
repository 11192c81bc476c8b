#!/usr/bin/env bash
# The GPU check (benchmarks/gpu_check.py): SFT and GRPO speed with FLOP/s over the bf16 peak,
# decode over the memory roofline, the studio's training events and GPU memory readout, and
# the `gpu` experiment profile, as one table. Nothing is downloaded.
#
#   bash scripts/gpu-check.sh              # on a GPU machine (< 8 min on one H200-class GPU)
#   bash scripts/gpu-check.sh --dry-run    # the same stages on the CPU with a tiny model
#   bash scripts/gpu-check.sh --json out.json
#
# Needs torch, transformers, peft, accelerate, trl and datasets; the project is used as
# source (this checkout). PYTHON picks the interpreter (default: .venv/bin/python if present,
# else python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  if [[ -x "$root/.venv/bin/python" ]]; then python="$root/.venv/bin/python"; else python=python3; fi
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" "$root/benchmarks/gpu_check.py" "$@"
