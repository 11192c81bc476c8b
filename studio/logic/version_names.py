"""How a stored harness version is named wherever the studio offers one to pick.

A bare hash tells an operator nothing; the label they moved and the message they typed do. So
every picker shows the same title, "production · a1b2c3d4 · Add refund skill" (labels, short
id, first line of the message), and keeps the whole message for the tooltip, where nothing
needs to be cut. One function keeps the pickers of the harness, data, train, evaluate and chat
pages naming a version the same way.

It takes any object with `id` (or `version_id`), `message` and `labels`: the store's
`VersionInfo` and chat's `HarnessChoice` both qualify.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

SHORT_ID = 8
"""Hex digits of a version id shown in titles (enough to tell versions of one harness apart)."""
SEP = " · "


def _version_id(version: Any) -> str:
    vid = getattr(version, "id", None) or getattr(version, "version_id", None)
    if not isinstance(vid, str) or not vid:
        raise TypeError(
            "a version needs a non-empty string `id` (or `version_id`), got "
            f"{type(version).__name__}"
        )
    return vid


def short_id(version_id: str) -> str:
    return version_id[:SHORT_ID]


def first_line(message: str) -> str:
    return next((line.strip() for line in message.splitlines() if line.strip()), "")


def version_title(version: Any, labels: Sequence[str] | None = None, *, head: bool = False) -> str:
    """ "production, staging · a1b2c3d4 · Add refund skill" ("head" first for the newest).

    `labels` overrides the version's own (a picker that read labels separately passes them);
    the message's first line is shown whole: a picker elides to its width, not to a count."""
    vid = _version_id(version)
    tags = list(labels if labels is not None else getattr(version, "labels", ()) or ())
    parts = (["head"] if head else []) + ([", ".join(tags)] if tags else [])
    parts.append(short_id(vid))
    message = first_line(str(getattr(version, "message", "") or ""))
    if message:
        parts.append(message)
    return SEP.join(parts)


def version_tooltip(version: Any, labels: Sequence[str] | None = None) -> str:
    """Everything a title leaves out: the full id, the whole message, labels and time."""
    vid = _version_id(version)
    tags = list(labels if labels is not None else getattr(version, "labels", ()) or ())
    lines = [f"version {vid}"]
    if tags:
        lines.append("labels: " + ", ".join(tags))
    created = getattr(version, "created_at", None)
    if isinstance(created, datetime):
        lines.append("saved " + created.strftime("%Y-%m-%d %H:%M"))
    message = str(getattr(version, "message", "") or "").strip()
    lines.append("")
    lines.append(message or "(no message)")
    return "\n".join(lines)


def version_items(versions: Iterable[Any]) -> list[tuple[str, str, str]]:
    """(id, title, tooltip) per version of a newest-first log; the first one is "head"."""
    return [
        (_version_id(v), version_title(v, head=i == 0), version_tooltip(v))
        for i, v in enumerate(versions)
    ]
