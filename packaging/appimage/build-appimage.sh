#!/usr/bin/env bash
# Recipe for HAT_Studio-x86_64.AppImage from the one-folder build (packaging/build.sh).
#
#   bash packaging/appimage/build-appimage.sh               # build dist/hat-studio if needed,
#                                                           # assemble the AppDir, run appimagetool
#   bash packaging/appimage/build-appimage.sh --appdir-only # assemble and check the AppDir only
#
# Layout (the AppImage spec's type 2 AppDir):
#   HAT_Studio.AppDir/AppRun                       -> usr/lib/hat-studio/hat-studio (or `hat`)
#   HAT_Studio.AppDir/hat-studio.desktop, hat-studio.svg, .DirIcon
#   HAT_Studio.AppDir/usr/lib/hat-studio/          the PyInstaller one-folder bundle
#   HAT_Studio.AppDir/usr/share/applications/, icons/hicolor/scalable/apps/, metainfo/
#
# appimagetool (https://github.com/AppImage/appimagetool, a single AppImage download) is not a
# distribution package; set APPIMAGETOOL=/path/to/appimagetool or put it on PATH. Without it
# this script stops after the AppDir with exit status 3 and says so.
set -euo pipefail
cd "$(dirname "$0")/../.."
appdir_only=0
[ "${1:-}" = "--appdir-only" ] && appdir_only=1
dist="${HAT_DIST:-dist}"
bundle="$dist/hat-studio"
if [ ! -x "$bundle/hat-studio" ]; then
  bash packaging/build.sh
fi
appdir="${HAT_APPDIR:-build/appimage/HAT_Studio.AppDir}"
rm -rf "$appdir"
mkdir -p "$appdir/usr/lib" "$appdir/usr/share/applications" \
  "$appdir/usr/share/icons/hicolor/scalable/apps" "$appdir/usr/share/metainfo"
cp -a "$bundle" "$appdir/usr/lib/hat-studio"
install -m 755 packaging/appimage/AppRun "$appdir/AppRun"
cp packaging/hat-studio.desktop "$appdir/hat-studio.desktop"
cp packaging/hat-studio.desktop "$appdir/usr/share/applications/hat-studio.desktop"
cp resources/studio/icons/logo.svg "$appdir/hat-studio.svg"
cp resources/studio/icons/logo.svg "$appdir/usr/share/icons/hicolor/scalable/apps/hat-studio.svg"
ln -sf hat-studio.svg "$appdir/.DirIcon"
cp packaging/appimage/hat-studio.appdata.xml "$appdir/usr/share/metainfo/hat-studio.appdata.xml"
if command -v desktop-file-validate >/dev/null 2>&1; then
  desktop-file-validate "$appdir/hat-studio.desktop"
fi
echo "AppDir ready: $appdir ($(du -sm "$appdir" | cut -f1) MB)"
[ "$appdir_only" = 1 ] && exit 0
tool="${APPIMAGETOOL:-$(command -v appimagetool || true)}"
if [ -z "$tool" ]; then
  echo "appimagetool not found: set APPIMAGETOOL=/path/to/appimagetool and run again" \
    "(or run: ARCH=x86_64 appimagetool $appdir $dist/HAT_Studio-x86_64.AppImage)" >&2
  exit 3
fi
ARCH="${ARCH:-x86_64}" "$tool" "$appdir" "$dist/HAT_Studio-${ARCH:-x86_64}.AppImage"
echo "built $dist/HAT_Studio-${ARCH:-x86_64}.AppImage"
