"""Async Alembic environment.

The URL comes from ``config.attributes["url"]`` when Craig runs migrations itself
(``craig db upgrade``, the test fixtures), else from Craig's settings (``CRAIG_DATABASE__URL``).
Revisions are plain SQL through ``op.execute``: the SQL is written out as it runs, and it must
run on PostgreSQL 15 and 18 alike (no ``uuidv7()``: ids are made by the application).
"""

from __future__ import annotations

import asyncio
import contextlib

from sqlalchemy import pool
from sqlalchemy.ext.asyncio import create_async_engine

from alembic import context
from craig.adapters.postgres.database import async_url

config = context.config


def _url() -> str:
    url = config.attributes.get("url")
    if url:
        return str(url)
    from craig.entrypoints.settings import load_settings

    settings = load_settings()
    if not settings.database.url:
        raise SystemExit("alembic needs CRAIG_DATABASE__URL; for the embedded profile run `craig db upgrade` instead")
    return settings.database.url


#: Held (a session-level advisory lock) while migrations run: two `craig db upgrade` at once, or
#: two processes migrating the embedded database as they start, run one after the other; the
#: second finds the work done instead of failing halfway through the first one's revision.
_LOCK = "SELECT pg_advisory_lock(hashtext('craig migrations'))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtext('craig migrations'))"
#: A revision's DDL waits this long for a table lock (behind a long transaction of the app), then
#: fails: the app's own statements would otherwise queue behind the waiting DDL, and stall.
_LOCK_TIMEOUT = "SET lock_timeout = '10s'"


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    connection.exec_driver_sql(_LOCK)  # waits as long as another run takes: no lock timeout yet
    connection.exec_driver_sql(_LOCK_TIMEOUT)
    connection.commit()
    try:
        context.configure(connection=connection, target_metadata=None, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()
        if connection.in_transaction():
            connection.commit()
    except BaseException:
        if connection.in_transaction():
            connection.rollback()
        raise
    finally:
        with contextlib.suppress(Exception):  # a lost connection released the lock already
            connection.exec_driver_sql(_UNLOCK)
            connection.commit()


async def _run_async() -> None:
    engine = create_async_engine(async_url(_url()), poolclass=pool.NullPool)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    context.configure(url=str(async_url(_url())), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
    else:
        asyncio.run(_run_async())
