"""Column types shared by every table of the store."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import String
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime stored as ISO-8601 text with microseconds (sorts as text).

    SQLAlchemy's DateTime drops the time zone on SQLite; this type never does, and the text is
    exactly what version ids hash, so a stored timestamp reproduces its id.
    """

    impl = String(32)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return to_text(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return from_text(value)


def to_text(value: datetime) -> str:
    if value.tzinfo is None:
        raise ValueError("naive datetime: the store keeps aware UTC times only")
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_text(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def utcnow() -> datetime:
    return datetime.now(UTC)
