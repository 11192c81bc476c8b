"""Alembic environment of the HAT store.

At run time ``core.store.db.migrate`` passes an open connection in ``config.attributes``. For
developers, ``alembic -c core/store/alembic.ini revision --autogenerate -m "..."`` works on the
database named by ``sqlalchemy.url`` (default: the home folder's ``hat.db``).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from core.store.tables import Base

config = context.config
target_metadata = Base.metadata


def _configure_and_run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite ALTER TABLE goes through table copies
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure_and_run(connection)
        return
    from core.paths import database_path
    from core.store.db import make_engine

    url = config.get_main_option("sqlalchemy.url")
    if url:
        from sqlalchemy import create_engine

        engine = create_engine(url)
    else:
        engine = make_engine(database_path())
    with engine.connect() as conn:
        _configure_and_run(conn)
        conn.commit()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
