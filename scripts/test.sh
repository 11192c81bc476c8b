#!/usr/bin/env bash
# Set up the environment and run every check CI runs: lint, types, import boundaries, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh "dev,studio,training"
# The vLLM server runs from its own venv (the serving tests start it); HAT_SKIP_VLLM=1 skips
# this locally (the vLLM tests then skip; in CI they must run).
if [ "${HAT_SKIP_VLLM:-0}" != 1 ]; then
  echo "== vllm venv"; bash scripts/setup-vllm.sh
fi
# shellcheck disable=SC1091
. "${HAT_VENV:-.venv}/bin/activate"
export QT_QPA_PLATFORM=offscreen
export HF_HUB_OFFLINE=1
echo "== ruff"; ruff check .
echo "== ruff format"; ruff format --check .
echo "== mypy (strict on core/)"; mypy
echo "== import boundaries"; lint-imports
ifeval="${HAT_IFEVAL_FILE:-../shared/data/ifeval/input_data.jsonl}"
if [ -f "$ifeval" ]; then echo "IFEval test data: $ifeval"
else echo "IFEval test data not found at $ifeval: the tests that need it skip"; fi
echo "== pytest"; python -m pytest "$@"
