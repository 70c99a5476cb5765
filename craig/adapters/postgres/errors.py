"""Translate SQLAlchemy / asyncpg errors into port errors (ARCHITECTURE rule 3)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from sqlalchemy import exc as sa_exc

from craig.ports.errors import (
    ConstraintViolation,
    DatabaseUnavailable,
    InvalidData,
    PortError,
    TransientConflict,
)

_TRANSIENT_SQLSTATES = {"40001", "40P01"}  # serialization_failure, deadlock_detected
_CONSTRAINT_SQLSTATES = {"23505", "23514", "23503", "23P01", "23502"}


def _sqlstate(error: BaseException) -> str | None:
    orig = getattr(error, "orig", None)
    for candidate in (orig, getattr(orig, "__cause__", None), error):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if code:
            return str(code)
    return None


def _constraint_name(error: BaseException) -> str:
    orig = getattr(error, "orig", None)
    for candidate in (getattr(orig, "__cause__", None), orig):
        name = getattr(candidate, "constraint_name", None)
        if name:
            return str(name)
    return "unknown"


def translate(error: BaseException) -> PortError:
    """The port error for a driver error (the caller raises it ``from`` the original)."""
    if isinstance(error, PortError):
        return error
    code = _sqlstate(error)
    if code in _TRANSIENT_SQLSTATES:
        return TransientConflict(str(error))
    if code in _CONSTRAINT_SQLSTATES:
        return ConstraintViolation(_constraint_name(error), str(getattr(error, "orig", error)))
    if code is not None and code.startswith("22"):  # data exception: the value, not the server
        return InvalidData(str(getattr(error, "orig", error)))
    return DatabaseUnavailable(f"{type(error).__name__}: {error}")


TRANSLATED = (
    sa_exc.DBAPIError,
    sa_exc.InterfaceError,
    sa_exc.OperationalError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    OSError,
    ConnectionError,
)


@asynccontextmanager
async def db_errors() -> AsyncIterator[None]:
    """Re-raise any driver error inside the block as a port error."""
    try:
        yield
    except TRANSLATED as error:
        raise translate(error) from error
