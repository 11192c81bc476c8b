"""The harness tree: overview, prompt sections, skills, tools and hooks, with a filter box.

Items carry (kind, key): ("overview", None), ("prompt", section id), ("group", attr) and
(attr, uid) for components. A text edit of one component relabels its item in place; only a
change of the list itself (add, remove, reorder) rebuilds a group.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QBrush
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QMenu,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio import theme
from studio.session import EditSession

ROLE = Qt.ItemDataRole.UserRole
GROUPS = (("skills", "Skills", "skill"), ("tools", "Tools", "tool"), ("hooks", "Hooks", "hook"))


class ComponentTree(QWidget):
    selected = Signal(str, object)
    """(kind, key) of the item the user chose."""
    add_requested = Signal(str)
    import_requested = Signal(str)
    """"tools", "skill", "hooks" or "export-tools" (the import/export dialogs)."""
    delete_requested = Signal(str, int)
    duplicate_requested = Signal(str, int)
    move_requested = Signal(str, int, int)

    def __init__(self, session: EditSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 12, 6, 12)
        lay.setSpacing(8)
        top = QHBoxLayout()
        top.setSpacing(6)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter   Ctrl+F")
        self.filter.setClearButtonEnabled(True)
        act = QAction(self.filter)
        theme.bind(act, lambda a: a.setIcon(theme.icon("search", "text-faint")))  # type: ignore[attr-defined]
        self.filter.addAction(act, QLineEdit.ActionPosition.LeadingPosition)
        top.addWidget(self.filter, 1)
        self.add_button = QToolButton()
        theme.bind_icon(self.add_button, "plus", "text-muted")
        self.add_button.setToolTip("Add a skill, tool or hook")
        self.add_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.add_button)
        for attr, title, icon in GROUPS:
            a = menu.addAction(theme.icon(icon), f"New {title[:-1].lower()}")
            a.triggered.connect(lambda _c=False, at=attr: self.add_requested.emit(at))
        menu.addSeparator()
        for key, text, icon in (
            ("tools", "Import tools…", "import"),
            ("skill", "Import skill folder…", "import"),
            ("hooks", "Import Claude Code hooks…", "import"),
            ("export-tools", "Export tools…", "export"),
        ):
            a = menu.addAction(theme.icon(icon), text)
            a.triggered.connect(lambda _c=False, k=key: self.import_requested.emit(k))
        self.import_actions = {a.text(): a for a in menu.actions() if a.text().endswith("…")}
        self.add_button.setMenu(menu)
        top.addWidget(self.add_button)
        lay.addLayout(top)
        frame = QFrame()
        frame.setObjectName("ListFrame")
        fl = QVBoxLayout(frame)
        fl.setContentsMargins(4, 4, 4, 4)
        self.tree = QTreeWidget()
        self.tree.setHeaderHidden(True)
        self.tree.setIndentation(14)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._menu)
        self.tree.currentItemChanged.connect(self._current_changed)
        fl.addWidget(self.tree)
        lay.addWidget(frame, 1)
        self.filter.textChanged.connect(self.apply_filter)
        self.groups: dict[str, QTreeWidgetItem] = {}
        self._uids: dict[str, list[int]] = {}
        self._items: dict[str, list[Any]] = {}
        self._building = False
        session.changed.connect(self._on_changed)
        session.reset.connect(self.rebuild)
        session.draftsChanged.connect(self._mark_drafts)
        theme.bind(self, lambda w: w.rebuild())  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ building

    def rebuild(self) -> None:
        doc = self.session.doc
        current = self.current_key()
        self._building = True
        self.tree.clear()
        self.groups = {}
        if doc is None:
            self._building = False
            return
        overview = QTreeWidgetItem(["Overview"])
        overview.setIcon(0, theme.icon("harness"))
        overview.setData(0, ROLE, ("overview", None))
        self.tree.addTopLevelItem(overview)
        prompt = QTreeWidgetItem(["Prompt"])
        prompt.setIcon(0, theme.icon("prompt"))
        prompt.setData(0, ROLE, ("prompt", None))
        self.tree.addTopLevelItem(prompt)
        self.groups["prompt"] = prompt
        self._fill_prompt()
        for attr, title, _icon in GROUPS:
            group = QTreeWidgetItem([title])
            group.setData(0, ROLE, ("group", attr))
            font = group.font(0)
            font.setWeight(font.Weight.DemiBold)
            group.setFont(0, font)
            group.setForeground(0, QBrush(theme.qcolor("text-muted")))
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.tree.addTopLevelItem(group)
            self.groups[attr] = group
            self._fill_group(attr)
        self.tree.expandAll()
        self._building = False
        self.apply_filter(self.filter.text())
        self._mark_drafts()
        if current is not None:
            self.select(*current, emit=False)

    def _fill_prompt(self) -> None:
        doc = self.session.doc
        assert doc is not None
        group = self.groups["prompt"]
        group.takeChildren()
        for s in doc.harness.prompt.sections:
            item = QTreeWidgetItem([s.title])
            item.setData(0, ROLE, ("prompt", s.id))
            item.setIcon(
                0,
                theme.icon(
                    {"skill_index": "skill", "tool_block": "tool"}.get(s.kind.value, "section"),
                    "text-faint",
                ),
            )
            if not s.enabled:
                item.setForeground(0, QBrush(theme.qcolor("text-faint")))
            group.addChild(item)

    def _fill_group(self, attr: str) -> None:
        doc = self.session.doc
        assert doc is not None
        group = self.groups[attr]
        group.takeChildren()
        icon = dict((a, i) for a, _t, i in GROUPS)[attr]
        items = getattr(doc.harness, attr)
        for i, comp in enumerate(items):
            child = QTreeWidgetItem()
            child.setData(0, ROLE, (attr, doc.uid(attr, i)))
            child.setIcon(0, theme.icon(icon, "text-faint"))
            self._label(child, comp)
            group.addChild(child)
        group.setText(0, f"{dict((a, t) for a, t, _ in GROUPS)[attr]}  ·  {len(items)}")
        self._uids[attr] = list(doc.uids[attr])
        self._items[attr] = list(items)

    @staticmethod
    def _label(item: QTreeWidgetItem, comp: Any) -> None:
        text = comp.name if comp.enabled else f"{comp.name}  (off)"
        if item.text(0) != text:
            item.setText(0, text)
        item.setForeground(0, QBrush(theme.qcolor("text" if comp.enabled else "text-faint")))
        tip = (getattr(comp, "description", "") or "")[:300]
        # the name first: a long one is elided in the tree
        item.setToolTip(0, f"{comp.name}\n\n{tip}" if tip else comp.name)

    def _on_changed(self, attr: str, _origin: object) -> None:
        doc = self.session.doc
        if doc is None or not self.groups:
            return
        if attr == "prompt":
            current = self.current_key()
            self._building = True
            self._fill_prompt()
            self._building = False
            self.apply_filter(self.filter.text())
            if current is not None and current[0] == "prompt":
                self.select(*current, emit=False)
            return
        if attr not in self.groups:
            return
        if self._uids.get(attr) != doc.uids[attr]:
            current = self.current_key()
            self._building = True
            self._fill_group(attr)
            self._building = False
            self.apply_filter(self.filter.text())
            self._mark_drafts()
            if current is not None:
                self.select(*current, emit=False)
            return
        group = self.groups[attr]
        shown = self._items.get(attr, [])
        items = list(getattr(doc.harness, attr))
        for i, comp in enumerate(items):
            if i >= len(shown) or shown[i] is not comp:  # only what changed is relabelled
                self._label(group.child(i), comp)
        self._items[attr] = items

    def _mark_drafts(self) -> None:
        doc = self.session.doc
        if doc is None:
            return
        for attr, group in self.groups.items():
            if attr == "prompt":
                continue
            icon = dict((a, i) for a, _t, i in GROUPS)[attr]
            for i in range(group.childCount()):
                child = group.child(i)
                _kind, uid = child.data(0, ROLE)
                broken = f"{attr}:{uid}" in doc.drafts
                child.setIcon(
                    0, theme.icon("alert", "danger") if broken else theme.icon(icon, "text-faint")
                )

    # ------------------------------------------------------------------ selection

    def current_key(self) -> tuple[str, Any] | None:
        item = self.tree.currentItem()
        return item.data(0, ROLE) if item is not None else None

    def _current_changed(self, item: QTreeWidgetItem | None, _prev: Any) -> None:
        if self._building or item is None:
            return
        kind, key = item.data(0, ROLE)
        if kind == "group":
            return
        self.selected.emit(kind, key)

    def select(self, kind: str, key: Any, emit: bool = True) -> bool:
        it = self._find(kind, key)
        if it is None:
            return False
        already = self.tree.currentItem() is it
        if not emit:
            self._building = True
        self.tree.setCurrentItem(it)  # emits `selected` through currentItemChanged
        self._building = False
        if emit and already:  # no change signal when it was current already
            self.selected.emit(kind, key)
        return True

    def _find(self, kind: str, key: Any) -> QTreeWidgetItem | None:
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            if top.data(0, ROLE) == (kind, key):
                return top
            for j in range(top.childCount()):
                child = top.child(j)
                if child.data(0, ROLE) == (kind, key):
                    return child
        return None

    def select_name(self, attr: str, name: str) -> bool:
        doc = self.session.doc
        if doc is None:
            return False
        if attr in ("prompt", "overview"):
            return self.select(attr, name or None)
        if attr not in self.groups:  # a stale or foreign saved selection
            return False
        for i, comp in enumerate(getattr(doc.harness, attr)):
            if comp.name == name:
                return self.select(attr, doc.uid(attr, i))
        group = self.groups.get(attr)
        if group is not None and group.childCount():
            return self.select(*group.child(0).data(0, ROLE))
        return False

    def apply_filter(self, text: str) -> None:
        needle = text.strip().lower()
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            visible_children = 0
            for j in range(top.childCount()):
                child = top.child(j)
                hit = (
                    not needle
                    or needle in child.text(0).lower()
                    or needle in child.toolTip(0).lower()
                )
                child.setHidden(not hit)
                visible_children += hit
            kind, _ = top.data(0, ROLE)
            if kind in ("group", "prompt") and top.childCount():
                top.setHidden(bool(needle) and visible_children == 0)

    def focus_filter(self) -> None:
        self.filter.setFocus()
        self.filter.selectAll()

    # ------------------------------------------------------------------ context menu

    def _menu(self, pos: Any) -> None:
        item = self.tree.itemAt(pos)
        menu = QMenu(self)
        if item is not None:
            kind, key = item.data(0, ROLE)
            if kind in ("skills", "tools", "hooks") and self.session.doc is not None:
                index = self.session.doc.index_of(kind, key)
                if index is not None:
                    count = len(getattr(self.session.doc.harness, kind))
                    menu.addAction(
                        theme.icon("copy"),
                        "Duplicate",
                        lambda: self.duplicate_requested.emit(kind, index),
                    )
                    up = menu.addAction(
                        "Move up", lambda: self.move_requested.emit(kind, index, index - 1)
                    )
                    up.setEnabled(index > 0)
                    down = menu.addAction(
                        "Move down", lambda: self.move_requested.emit(kind, index, index + 1)
                    )
                    down.setEnabled(index < count - 1)
                    menu.addSeparator()
                    menu.addAction(
                        theme.icon("trash", "danger"),
                        "Delete",
                        lambda: self.delete_requested.emit(kind, index),
                    )
                    menu.addSeparator()
            if kind == "group":
                attr = key
                menu.addAction(
                    theme.icon("plus"), f"New {attr[:-1]}", lambda: self.add_requested.emit(attr)
                )
        for attr, title, icon in GROUPS:
            menu.addAction(
                theme.icon(icon),
                f"New {title[:-1].lower()}",
                lambda a=attr: self.add_requested.emit(a),
            )
        menu.exec(self.tree.viewport().mapToGlobal(pos))
