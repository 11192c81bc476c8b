#!/usr/bin/env bash
# Set up the environment and run every check CI runs: lint, types, import boundaries, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh "dev,studio"
# shellcheck disable=SC1091
. "${HAT_VENV:-.venv}/bin/activate"
export QT_QPA_PLATFORM=offscreen
echo "== ruff"; ruff check .
echo "== ruff format"; ruff format --check .
echo "== mypy (strict on core/)"; mypy
echo "== import boundaries"; lint-imports
echo "== pytest"; python -m pytest "$@"
