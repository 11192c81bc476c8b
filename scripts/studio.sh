#!/usr/bin/env bash
# Set up the environment and open the studio on the embedded demo workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh "studio,training,eval"
# shellcheck disable=SC1091
. "${HAT_VENV:-.venv}/bin/activate"
# The embedded demo model: imported once on first run (about a minute, with a progress bar),
# instant afterwards.
hat models add-demo --quiet
# Qt 6.5+ aborts (SIGABRT, a core dump) when X libraries such as libxcb-cursor0 are missing:
# name them and the install command instead.
python -m core.doctor.qtlibs || exit 1
exec hat-studio "$@"
