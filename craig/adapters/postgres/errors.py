"""Translate asyncpg's errors into port errors.

Only a failure of the connection or of the server's availability is :class:`DatabaseUnavailable`
(a retryable 503). Everything the server refuses for a reason of its own that retrying cannot
fix (an undefined table or column, a syntax error, a missing privilege, any class not listed
here) is a :class:`DatabaseDefect`: a 500 with an incident id, never a 503 that clients would
retry forever.

A port error's text is the server's message without the DETAIL it may add (which quotes the
values of a row) and without a value the message quotes (see :func:`_words`); where the
driver's own error would quote one (a bad value, a refused constraint), the port error does not
keep it as its cause (see :func:`port_error`), so a logged traceback does not either.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import asyncpg

from craig.ports.errors import (
    ConstraintViolation,
    DatabaseDefect,
    DatabaseUnavailable,
    InvalidData,
    PortError,
    TransientConflict,
)

#: asyncpg's words for a parameter it could not encode; the value follows the colon.
_BAD_ARGUMENT = re.compile(r"(invalid input for query argument \$\d+)")
_TRANSIENT_SQLSTATES = {"40001", "40P01"}  # serialization_failure, deadlock_detected
_CONSTRAINT_SQLSTATES = {"23505", "23514", "23503", "23P01", "23502"}
#: connection exception, authentication (at connect), insufficient resources, operator
#: intervention (shutdown, statement timeout), system error (I/O). Class 28 and 3D000 are
#: configuration errors, but they come only from opening a connection, so the request was fine
#: and the same pool recovers once an operator fixes the role or the database: retryable.
_UNAVAILABLE_CLASSES = ("08", "28", "53", "57", "58")
_UNAVAILABLE_SQLSTATES = {
    "40003",  # statement_completion_unknown: the connection died during the commit
    "55P03",  # lock_not_available: a lock wait timed out
    "25006",  # read_only_sql_transaction: a standby, in the middle of a failover
    "25P03",  # idle_in_transaction_session_timeout: the server closed the session
    "3D000",  # invalid_catalog_name at connect: the database is being recreated or restored
}
#: Errors that carry no SQLSTATE yet mean the connection is gone or none could be had.
_DISCONNECTS = (OSError, asyncpg.ConnectionDoesNotExistError, TimeoutError)


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The error and its causes (and the driver error a wrapper keeps as ``orig``)."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop(0)
        if current is None or id(current) in seen or len(seen) > 16:
            continue
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)
        pending += [orig if isinstance(orig, BaseException) else None, current.__cause__]


def _sqlstate(error: BaseException) -> str | None:
    for candidate in _chain(error):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if code:
            return str(code)
    return None


def _constraint_name(error: BaseException) -> str:
    for candidate in _chain(error):
        name = getattr(candidate, "constraint_name", None)
        if name:
            return str(name)
    return "unknown"


def _is_disconnect(error: BaseException) -> bool:
    if isinstance(error, _DISCONNECTS) or getattr(error, "connection_invalidated", False):
        return True
    # asyncpg's word for a connection that closed under us (SQLAlchemy's dialect reads it so too)
    return isinstance(error, asyncpg.InterfaceError) and "connection is closed" in str(error)


def is_unavailable(error: BaseException, code: str | None) -> bool:
    """True when the error says the server cannot serve us right now (retry later)."""
    if code is not None and (code in _UNAVAILABLE_SQLSTATES or code.startswith(_UNAVAILABLE_CLASSES)):
        return True
    return any(_is_disconnect(candidate) for candidate in _chain(error))


def translate(error: BaseException) -> PortError:
    """The port error for a driver error (the caller raises it ``from`` the original)."""
    if isinstance(error, PortError):
        return error
    if isinstance(error, asyncpg.InvalidCachedStatementError):
        # The schema changed under a prepared statement: it is prepared again on the next try.
        return DatabaseUnavailable(f"{type(error).__name__}: {_words(error)}")
    code = _sqlstate(error)
    words = _words(error)
    if code in _TRANSIENT_SQLSTATES:
        return TransientConflict(words)
    if code in _CONSTRAINT_SQLSTATES:
        return ConstraintViolation(_constraint_name(error), words)
    if code is not None and code.startswith("22"):  # data exception: the value, not the server
        return InvalidData(words)
    if is_unavailable(error, code):
        return DatabaseUnavailable(f"{type(error).__name__}: {words}")
    state = f" (SQLSTATE {code})" if code else ""
    return DatabaseDefect(f"{type(error).__name__}{state}: {words}")


def port_error(error: BaseException, translated: PortError | None = None) -> PortError:
    """The port error to raise for the driver's ``error`` (``translated``, else
    :func:`translate`'s), with ``error`` as its cause, unless the driver's words would quote a
    value: a bad value and a refused constraint are told by the port error's own words, SQLSTATE
    and constraint name, so that no logged traceback shows the value. Raise it as it is (without
    ``from``): the cause is set here."""
    failed = translated or translate(error)
    if failed is not error:
        failed.__cause__ = None if isinstance(failed, InvalidData | ConstraintViolation) else error
        failed.__suppress_context__ = True
    return failed


def _words(error: BaseException) -> str:
    """What the error says, without the DETAIL and HINT lines asyncpg appends to it, and
    without the value it quotes: asyncpg names a parameter it cannot encode with the value's
    ``repr`` (``invalid input for query argument $2: 'Jane Doe' (expected a datetime...)``), and
    PostgreSQL a value it cannot read after a colon (``invalid input syntax for type integer:
    "Jane"``). Both keep what was wrong; neither keeps the value."""
    for candidate in _chain(error):
        if isinstance(candidate, asyncpg.PostgresError | asyncpg.InterfaceError) and candidate.args:
            return _without_values(str(candidate.args[0]))
    return str(error)


def _without_values(message: str) -> str:
    argument = _BAD_ARGUMENT.match(message)
    if argument is not None:
        reason = message.rsplit(" (", 1)[1] if message.endswith(")") and " (" in message else ""
        return f"{argument.group(1)}: (value not shown) ({reason}" if reason else f"{argument.group(1)}"
    head, quoted, _ = message.partition(': "')
    return f"{head}: (value not shown)" if quoted else message


TRANSLATED = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
    ConnectionError,
)


@asynccontextmanager
async def db_errors() -> AsyncIterator[None]:
    """Re-raise any driver error inside the block as a port error."""
    try:
        yield
    except TRANSLATED as error:
        raise port_error(error)  # noqa: B904 -- port_error sets the cause
