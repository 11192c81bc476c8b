#!/usr/bin/env bash
# Set up the environment and open the studio on the embedded demo workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh "studio"
# shellcheck disable=SC1091
. "${HAT_VENV:-.venv}/bin/activate"
exec hat-studio "$@"
