"""Reading what a statement cost from ``EXPLAIN (ANALYZE, FORMAT JSON)``: rows examined, not
just node types (an index scan that walks the whole history is still an index scan)."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncConnection


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


async def explain_analyze(conn: AsyncConnection, statement: TextClause | str, params: Mapping[str, Any]) -> Any:
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
