"""Light and dark themes: colour tokens, the QSS built from them, fonts and themed SVG icons.

`resources/studio/themes/studio.qss` is a template: `@token` names are replaced by the colours
of the active palette (longest names first). Icons are the SVGs in `resources/studio/icons`,
drawn with `currentColor`; `icon(name, role)` renders them in the palette colour of `role`, and
`bind_icon` re-renders a widget's icon when the theme changes.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import shiboken6
from PySide6.QtCore import QByteArray, QObject, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QIcon, QPainter, QPalette, QPixmap
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel

RESOURCES = Path(__file__).resolve().parent.parent / "resources" / "studio"
ICONS = RESOURCES / "icons"
THEMES = ("light", "dark")

PALETTES: dict[str, dict[str, str]] = {
    "light": {
        "window": "#F5F6F8",
        "surface": "#FFFFFF",
        "surface-alt": "#F7F8FA",
        "surface-sunken": "#EEF0F3",
        "sidebar": "#EDEFF3",
        "sidebar-hover": "#E2E5EB",
        "border": "#E1E4E9",
        "border-strong": "#C9CED6",
        "text": "#1A1D23",
        "text-muted": "#5C6573",
        "text-faint": "#8A93A0",
        "accent": "#5B50E6",
        "accent-hover": "#4B41D1",
        "accent-soft": "#ECEAFF",
        "accent-text": "#4338CA",
        "on-accent": "#FFFFFF",
        "success": "#16804A",
        "success-soft": "#E3F5EA",
        "warning": "#B76E00",
        "warning-soft": "#FFF3DC",
        "danger": "#C9372C",
        "danger-soft": "#FDECEA",
        "info-soft": "#E8F1FF",
        "info": "#1F5FBF",
        "added": "#E6F5EB",
        "added-strong": "#B4E2C3",
        "removed": "#FCEBEA",
        "removed-strong": "#F5BDB8",
        "selection": "#DAD6FF",
        "code-bg": "#FAFBFC",
        "chip-production": "#E3F5EA",
        "chip-production-text": "#16804A",
        "chip-staging": "#FFF3DC",
        "chip-staging-text": "#9A5B00",
        "chip-custom": "#ECEAFF",
        "chip-custom-text": "#4338CA",
        "shadow": "#1A1D2314",
    },
    "dark": {
        "window": "#121318",
        "surface": "#1A1C22",
        "surface-alt": "#1F2128",
        "surface-sunken": "#16171C",
        "sidebar": "#0E0F13",
        "sidebar-hover": "#1D1F26",
        "border": "#2A2D35",
        "border-strong": "#3A3E48",
        "text": "#E7E9EE",
        "text-muted": "#A0A7B3",
        "text-faint": "#6F7683",
        "accent": "#7B72FF",
        "accent-hover": "#8E86FF",
        "accent-soft": "#27254A",
        "accent-text": "#B3ADFF",
        "on-accent": "#FFFFFF",
        "success": "#4CC38A",
        "success-soft": "#173226",
        "warning": "#F0B453",
        "warning-soft": "#3A2C14",
        "danger": "#FF6B61",
        "danger-soft": "#3C1E1E",
        "info-soft": "#1B2A44",
        "info": "#7FB0FF",
        "added": "#15301F",
        "added-strong": "#23603A",
        "removed": "#3A1B1C",
        "removed-strong": "#7A2E2C",
        "selection": "#3A3670",
        "code-bg": "#15161B",
        "chip-production": "#173226",
        "chip-production-text": "#6DDBA3",
        "chip-staging": "#3A2C14",
        "chip-staging-text": "#F5C26B",
        "chip-custom": "#27254A",
        "chip-custom-text": "#B3ADFF",
        "shadow": "#00000066",
    },
}

UI_FONTS = (
    "Inter",
    "Segoe UI",
    "SF Pro Text",
    "Helvetica Neue",
    "Cantarell",
    "Noto Sans",
    "DejaVu Sans",
)
MONO_FONTS = ("JetBrains Mono", "Cascadia Code", "SF Mono", "Menlo", "Consolas", "DejaVu Sans Mono")


class _ThemeState(QObject):
    changed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.name = "light"
        self.bound: list[tuple[weakref.ref[QObject], Callable[[QObject], None]]] = []
        self.styled: QApplication | None = None
        """The application Fusion and the UI font were set on (once: setting them again on
        every switch re-laid out every widget, ~0.5 s of a switch with all pages built)."""


_state: _ThemeState | None = None


def state() -> _ThemeState:
    global _state
    if _state is None:
        _state = _ThemeState()
    return _state


def current() -> str:
    return state().name


def color(token: str) -> str:
    return PALETTES[current()][token]


def qcolor(token: str) -> QColor:
    return QColor(color(token))


@lru_cache(maxsize=1)
def _families() -> frozenset[str]:
    # Inter ships with the studio (resources/studio/fonts, SIL OFL 1.1): the layout is drawn
    # for its widths, and a wider fallback (DejaVu Sans on a bare Linux) cut labels short.
    for file in sorted((RESOURCES / "fonts").glob("*.otf")):
        QFontDatabase.addApplicationFont(str(file))
    return frozenset(QFontDatabase.families())


def _first_family(candidates: tuple[str, ...]) -> str | None:
    families = _families()
    return next((f for f in candidates if f in families), None)


def ui_font(pixel_size: int = 13) -> QFont:
    """The UI font in pixels, like the stylesheet's sizes (points would scale differently)."""
    font = QFont()
    family = _first_family(UI_FONTS)
    if family:
        font.setFamily(family)
    font.setPixelSize(pixel_size)
    font.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
    return font


def mono_font(pixel_size: int = 12) -> QFont:
    family = _first_family(MONO_FONTS)
    font = QFont(family) if family else QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setPixelSize(pixel_size)
    return font


def _themed_svg(icon_name: str, colour: str) -> str:
    """Path of a copy of icon `icon_name` drawn in `colour` (QSS url() needs a file)."""
    folder = (
        Path(tempfile.gettempdir())
        / f"hat-studio-icons-{os.getuid() if hasattr(os, 'getuid') else 0}"
    )
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{icon_name}-{colour.lstrip('#')}.svg"
    if not target.exists():
        text = (
            (ICONS / f"{icon_name}.svg").read_text(encoding="utf-8").replace("currentColor", colour)
        )
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text.replace('stroke-width="1.8"', 'stroke-width="2.4"'), encoding="utf-8")
        os.replace(tmp, target)
    return target.as_posix()


def stylesheet(name: str) -> str:
    template = (RESOURCES / "themes" / "studio.qss").read_text(encoding="utf-8")
    palette = PALETTES[name]
    template = template.replace("@arrow-down", _themed_svg("chevron-down", palette["text-muted"]))
    template = template.replace("@arrow-up", _themed_svg("chevron-up", palette["text-muted"]))
    template = template.replace("@check-mark", _themed_svg("check", palette["on-accent"]))
    for token in sorted(palette, key=len, reverse=True):
        template = template.replace(f"@{token}", palette[token])
    mono = _first_family(MONO_FONTS) or "monospace"
    return template.replace("@mono-family", mono)


def _qpalette(name: str) -> QPalette:
    p = PALETTES[name]
    pal = QPalette()
    roles = {
        QPalette.ColorRole.Window: p["window"],
        QPalette.ColorRole.WindowText: p["text"],
        QPalette.ColorRole.Base: p["surface"],
        QPalette.ColorRole.AlternateBase: p["surface-alt"],
        QPalette.ColorRole.Text: p["text"],
        QPalette.ColorRole.Button: p["surface"],
        QPalette.ColorRole.ButtonText: p["text"],
        QPalette.ColorRole.Highlight: p["accent"],
        QPalette.ColorRole.HighlightedText: p["on-accent"],
        QPalette.ColorRole.ToolTipBase: p["surface"],
        QPalette.ColorRole.ToolTipText: p["text"],
        QPalette.ColorRole.PlaceholderText: p["text-faint"],
        QPalette.ColorRole.Link: p["accent-text"],
        QPalette.ColorRole.Mid: p["border"],
        QPalette.ColorRole.Midlight: p["surface-alt"],
        QPalette.ColorRole.Dark: p["border-strong"],
        QPalette.ColorRole.Light: p["surface"],
    }
    for role, value in roles.items():
        pal.setColor(role, QColor(value))
    for role in (
        QPalette.ColorRole.Text,
        QPalette.ColorRole.WindowText,
        QPalette.ColorRole.ButtonText,
    ):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor(p["text-faint"]))
    return pal


def apply(app: QApplication, name: str) -> None:
    """Switch the whole application to theme `name` (light or dark)."""
    if name not in PALETTES:
        name = "light"
    st = state()
    st.name = name
    if st.styled is not app:
        if app.style().name().lower() != "fusion":
            app.setStyle("Fusion")
        app.setFont(ui_font())
        st.styled = app
    app.setPalette(_qpalette(name))
    app.setStyleSheet(stylesheet(name))
    _icon.cache_clear()
    alive = []
    for ref, fn in st.bound:
        obj = ref()
        if obj is None or not shiboken6.isValid(obj):
            continue
        try:
            fn(obj)
        except RuntimeError:  # deleted on the C++ side meanwhile
            continue
        alive.append((ref, fn))
    st.bound = alive
    st.changed.emit(name)


# ----------------------------------------------------------------------------- icons


@lru_cache(maxsize=512)
def _icon(name: str, colour: str, theme: str) -> QIcon:
    del theme  # part of the cache key only
    path = ICONS / f"{name}.svg"
    data = path.read_text(encoding="utf-8").replace("currentColor", colour)
    renderer = QSvgRenderer(QByteArray(data.encode("utf-8")))
    out = QIcon()
    for size in (16, 20, 24, 32, 48):
        pix = QPixmap(size * 2, size * 2)
        pix.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pix)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter, QRectF(0, 0, size * 2, size * 2))
        painter.end()
        pix.setDevicePixelRatio(2.0)
        out.addPixmap(pix)
    return out


def icon(name: str, role: str = "text-muted") -> QIcon:
    """Icon `name` drawn in the colour of palette token `role` (or a literal #colour)."""
    colour = role if role.startswith("#") else color(role)
    return _icon(name, colour, current())


def pixmap(name: str, size: int, role: str = "text-muted") -> QPixmap:
    return icon(name, role).pixmap(QSize(size, size))


def bind(obj: QObject, fn: Callable[[QObject], None]) -> None:
    """Call fn(obj) now and after every theme change (while obj lives)."""
    fn(obj)
    state().bound.append((weakref.ref(obj), fn))


def bind_icon(
    widget: QAbstractButton | QLabel, name: str, role: str = "text-muted", size: int = 16
) -> None:
    def refresh(w: QObject) -> None:
        if isinstance(w, QAbstractButton):
            w.setIcon(icon(name, role))
        elif isinstance(w, QLabel):
            w.setPixmap(pixmap(name, size, role))

    bind(widget, refresh)


def logo_pixmap(size: int) -> QPixmap:
    renderer = QSvgRenderer(str(ICONS / "logo.svg"))
    pix = QPixmap(size * 2, size * 2)
    pix.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pix)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter, QRectF(0, 0, size * 2, size * 2))
    painter.end()
    pix.setDevicePixelRatio(2.0)
    return pix
