"""SQLAlchemy compiles, asyncpg runs: how every statement of Craig reaches PostgreSQL.

The statements stay SQLAlchemy ``text()`` clauses with ``:name`` parameters (typed with
``bindparam`` where the value needs converting: JSONB, arrays, BYTEA). Each is compiled once by
SQLAlchemy's asyncpg dialect, so the server receives exactly the ``$n`` SQL, casts and
converted values SQLAlchemy would send, and then runs on an asyncpg connection of
:class:`craig.adapters.postgres.database.PostgresDatabase`'s pool as a prepared statement from
that connection's statement cache (prepared once per connection, then one round trip per run).

What is left out is SQLAlchemy's execution layer: its greenlet bridge, the execution context it
builds for every statement and its result machinery, which a profile of the request path showed
costing more than asyncpg itself. Results offer the part of SQLAlchemy's result API the
repositories use (``first``, ``one``, ``all``, ``scalar_one``, ``mappings``...), and rows read
by name, by position or as attributes; a statement whose count of changed rows matters runs
with :func:`affected` instead.
"""

from __future__ import annotations

import re
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import asyncpg
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects.postgresql.asyncpg import PGDialect_asyncpg
from sqlalchemy.sql.elements import BindParameter, TextClause
from sqlalchemy.sql.sqltypes import NullType

_DIALECT = PGDialect_asyncpg()  # type: ignore[no-untyped-call]
_REQUIRED = object()
_ROWCOUNT = re.compile(r"(?:SELECT|UPDATE|DELETE|MERGE|INSERT \d+) (\d+)")


class Row(asyncpg.Record):  # type: ignore[misc]
    """A row: ``row["name"]``, ``row[0]``, and ``row.name`` as SQLAlchemy's rows allow."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Statement:
    """One ``text()`` clause as the asyncpg dialect compiles it: the ``$n`` SQL, and for each
    position the parameter's name, its converter (or None) and the value bound to the clause
    itself (or required)."""

    __slots__ = ("parameters", "sql")

    def __init__(self, clause: TextClause) -> None:
        compiled = clause.compile(dialect=_DIALECT)
        processors = compiled._bind_processors
        parameters = []
        for name in compiled.positiontup or ():
            bind = compiled.binds[name]
            if bind.expanding:
                raise TypeError(f"expanding parameter :{name} is not supported; pass an array (= ANY(:{name}))")
            value = _REQUIRED if bind.required else bind.effective_value
            process = processors.get(name)
            if process is not None and not callable(process):
                raise TypeError(f"parameter :{name} has a tuple type, which Craig's statements do not use")
            parameters.append((name, process, value))
        self.sql: str = compiled.string
        self.parameters: tuple[tuple[str, Callable[[Any], Any] | None, Any], ...] = tuple(parameters)

    def arguments(self, values: Mapping[str, Any] | None) -> list[Any]:
        """The positional arguments for ``values`` (converted as SQLAlchemy converts them)."""
        given = values or {}
        arguments = []
        for name, process, bound in self.parameters:
            value = given.get(name, bound)
            if value is _REQUIRED:
                # SQLAlchemy's own error, never a silent NULL.
                raise sa_exc.ArgumentError(f"a value is required for bind parameter {name!r}")
            arguments.append(value if process is None else process(value))
        return arguments


_by_clause: weakref.WeakKeyDictionary[TextClause, Statement] = weakref.WeakKeyDictionary()
#: Clauses made afresh per call (a search with its filters) share one compilation per text.
_by_text: OrderedDict[str, Statement] = OrderedDict()
_BY_TEXT_MAX = 512


def _plain(bind: BindParameter[Any]) -> bool:
    """A parameter as ``text()`` makes it from ``:name``: no type, no value of its own."""
    return isinstance(bind.type, NullType) and bind.value is None and bind.callable is None


def compiled(clause: TextClause) -> Statement:
    """``clause`` compiled, once per clause object (and once per text for plain ones)."""
    found = _by_clause.get(clause)
    if found is not None:
        return found
    plain = all(_plain(bind) for bind in clause._bindparams.values())
    if plain and (found := _by_text.get(clause.text)) is not None:
        _by_text.move_to_end(clause.text)
    else:
        found = Statement(clause)
        if plain:
            _by_text[clause.text] = found
            if len(_by_text) > _BY_TEXT_MAX:
                _by_text.popitem(last=False)
    _by_clause[clause] = found
    return found


class Result:
    """The rows of one statement."""

    __slots__ = ("_rows",)

    def __init__(self, rows: list[Row]) -> None:
        self._rows = rows

    def mappings(self) -> Result:
        return self  # a row reads by name already

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows)

    def all(self) -> list[Row]:
        return list(self._rows)

    def first(self) -> Row | None:
        return self._rows[0] if self._rows else None

    def one_or_none(self) -> Row | None:
        if len(self._rows) > 1:
            raise sa_exc.MultipleResultsFound("multiple rows were found when one or none was required")
        return self.first()

    def one(self) -> Row:
        row = self.one_or_none()
        if row is None:
            raise sa_exc.NoResultFound("no row was found when one was required")
        return row

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None

    def scalar_one(self) -> Any:
        return self.one()[0]

    def scalar_one_or_none(self) -> Any:
        row = self.one_or_none()
        return None if row is None else row[0]

    def scalars(self) -> Scalars:
        return Scalars([row[0] for row in self._rows])


class Scalars:
    """The first column of every row."""

    __slots__ = ("_values",)

    def __init__(self, values: list[Any]) -> None:
        self._values = values

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def all(self) -> list[Any]:
        return list(self._values)

    def first(self) -> Any:
        return self._values[0] if self._values else None


async def run(conn: asyncpg.Connection, clause: TextClause, values: Mapping[str, Any] | None) -> Result:
    """Run ``clause`` with ``values`` on ``conn`` and keep its rows; driver errors propagate."""
    statement = compiled(clause)
    return Result(await conn.fetch(statement.sql, *statement.arguments(values)))


async def run_many(conn: asyncpg.Connection, clause: TextClause, many: Sequence[Mapping[str, Any]]) -> None:
    """``clause`` once per set of values, pipelined (asyncpg's ``executemany``)."""
    statement = compiled(clause)
    await conn.executemany(statement.sql, [statement.arguments(values) for values in many])


async def affected(conn: asyncpg.Connection, clause: TextClause, values: Mapping[str, Any] | None) -> int:
    """Run ``clause`` (no rows wanted) and return how many rows it inserted, changed or deleted."""
    statement = compiled(clause)
    status = await conn.execute(statement.sql, *statement.arguments(values))
    match = _ROWCOUNT.match(status)
    return int(match.group(1)) if match else 0
