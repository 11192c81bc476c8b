#!/usr/bin/env bash
# Build the one-folder desktop bundle: dist/hat-studio/ (hat-studio, plus a `hat` symlink for
# the command line). Uses the project venv; installs the `packaging` extra (PyInstaller) into it
# when missing.
#
#   bash packaging/build.sh                  # -> dist/hat-studio/
#   HAT_BUNDLE_DEMO=0 bash packaging/build.sh   # without the 98 MB demo model GGUF
#   bash packaging/build.sh --distpath D --workpath W   # extra arguments go to PyInstaller
#
# Prints the build time and the bundle size at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${HAT_VENV:-.venv}"
if [ ! -x "$venv/bin/python" ]; then
  bash scripts/setup-env.sh "studio"
fi
py="$venv/bin/python"
if ! "$py" -c "import PyInstaller" 2>/dev/null; then
  "$py" -m pip install -q -e ".[studio,packaging]"
fi
distpath=dist
workpath=build/pyinstaller
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --distpath) distpath="$2"; shift 2 ;;
    --workpath) workpath="$2"; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
started=$(date +%s)
"$py" -m PyInstaller --noconfirm --clean --log-level WARN \
  --distpath "$distpath" --workpath "$workpath" "${args[@]}" packaging/hat-studio.spec
bundle="$distpath/hat-studio"
ln -sf hat-studio "$bundle/hat"
cp packaging/hat-studio.desktop "$bundle/"
cp resources/studio/icons/logo.svg "$bundle/hat-studio.svg"
seconds=$(( $(date +%s) - started ))
size=$(du -sm "$bundle" | cut -f1)
echo "built $bundle in ${seconds} s, ${size} MB"
