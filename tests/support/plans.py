"""Reading what a statement cost from ``EXPLAIN (ANALYZE, FORMAT JSON)``: rows examined, not
just node types (an index scan that walks the whole history is still an index scan)."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import TextClause, text

from craig.adapters.postgres import driver
from craig.adapters.postgres.database import DriverConnection, PostgresDatabase


def plan_nodes(plan: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def rows_examined(plan: Mapping[str, Any], tables: Collection[str]) -> int:
    """Rows the scans of ``tables`` read: for each scan node, the rows it returned plus those its
    filter or an index recheck threw away, times its loops (EXPLAIN reports them per loop).
    Index entries that failed the index condition are never read, and are not counted."""
    total = 0.0
    for node in plan_nodes(plan):
        if node.get("Relation Name") in tables and node["Node Type"] != "ModifyTable":
            per_loop = (
                node["Actual Rows"]
                + node.get("Rows Removed by Filter", 0)
                + node.get("Rows Removed by Index Recheck", 0)
            )
            total += per_loop * node["Actual Loops"]
    return round(total)


def scans(plan: Mapping[str, Any], tables: Collection[str]) -> list[tuple[str, str, int]]:
    """(table, node type, rows examined) of every scan of ``tables``, for failure messages."""
    return [
        (node["Relation Name"], node["Node Type"], rows_examined({**node, "Plans": []}, tables))
        for node in plan_nodes(plan)
        if node.get("Relation Name") in tables and node["Node Type"] != "ModifyTable"
    ]


async def explain_analyze(conn: DriverConnection, statement: TextClause | str, params: Mapping[str, Any]) -> Any:
    """Run ``statement`` under ``EXPLAIN (ANALYZE, FORMAT JSON)`` (it really runs: a DELETE
    deletes) and return its plan's root node. ``statement`` keeps its typed bind parameters."""
    if isinstance(statement, TextClause):
        explained = text(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement.text}").bindparams(
            *statement._bindparams.values()  # the typed parameters (arrays) the statement declared
        )
    else:
        explained = text(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}")
    raw = (await conn.execute(explained, dict(params))).scalar_one()
    return (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]


@contextmanager
def capturing_statements() -> Iterator[list[tuple[str, list[Any]]]]:
    """Every statement the pool's connections run while the block runs, as the server receives
    it: its ``$n`` SQL and its arguments (those a dedicated or listening connection runs are
    not among them)."""
    captured: list[tuple[str, list[Any]]] = []
    originals = {name: getattr(driver, name) for name in ("run", "run_many", "affected")}

    def capturing(name: str) -> Any:
        async def run(conn: Any, clause: TextClause, values: Any) -> Any:
            statement = driver.compiled(clause)
            for one in values if name == "run_many" else [values]:
                captured.append((statement.sql, statement.arguments(one)))
            return await originals[name](conn, clause, values)

        return run

    for name in originals:
        setattr(driver, name, capturing(name))
    try:
        yield captured
    finally:
        for name, original in originals.items():
            setattr(driver, name, original)


async def explain_captured(database: PostgresDatabase, sql: str, arguments: Sequence[Any]) -> Any:
    """A captured statement run again under ``EXPLAIN (ANALYZE, FORMAT JSON)`` with its own
    arguments, in a transaction rolled back (a purge that ran leaves the tables as it left them);
    the plan's root node."""
    async with database.connect() as conn:
        transaction = conn.raw.transaction()
        await transaction.start()
        try:
            raw = await conn.raw.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", *arguments)
        finally:
            await transaction.rollback()
    return (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
