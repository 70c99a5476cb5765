"""Counting rows that pile up with history, at a cost that does not grow with it.

``count(*)`` over every sent job or every stored response reads them all: on a table that only
grows, each ``/metrics`` scrape and each ``craig status`` would get slower for ever. A
:class:`BoundedCount` instead walks the index of its state in order, and stops at ``cap`` rows:
below the cap the count is exact, at the cap it is the planner's estimate from the table's
statistics (``pg_class.reltuples`` and the column's most common values), never less than the cap.
"""

from __future__ import annotations

from typing import Any

import attrs
from sqlalchemy import TextClause, text

from craig.adapters.postgres.database import DriverConnection, json_value


@attrs.frozen
class BoundedCount:
    """Rows of ``table`` matching ``where``; ``order_by`` is the column of the (partial) index
    that serves ``where``, so the capped count is an index scan that stops early."""

    table: str
    where: str
    order_by: str
    capped: TextClause = attrs.field(init=False)
    estimate: TextClause = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        rows = f"SELECT 1 FROM {self.table} WHERE {self.where}"
        object.__setattr__(self, "capped", text(f"SELECT count(*) FROM ({rows} ORDER BY {self.order_by} LIMIT :cap) c"))
        object.__setattr__(self, "estimate", text(f"EXPLAIN (FORMAT JSON) {rows}"))

    async def run(self, conn: DriverConnection, cap: int) -> int:
        exact = int((await conn.execute(self.capped, {"cap": cap})).scalar_one())
        if exact < cap:
            return exact
        plan: Any = json_value((await conn.execute(self.estimate)).scalar_one())
        return max(cap, int(plan[0]["Plan"]["Plan Rows"]))
