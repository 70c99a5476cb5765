"""Resolve a route's dependencies one after another, never in an anyio task group.

Litestar resolves the dependencies of one depth (the principal and the unit of work, say)
concurrently, in a task group. Each of Craig's dependencies is a few microseconds of Python
with no I/O, so starting a task group and its tasks for them cost more than the dependencies
themselves: about a tenth of a case read's CPU, measured in process. :func:`resolve_in_turn`
splits every batch of every route into batches of one, in an order that keeps each dependency
after those it needs (the batches already come in that order).
"""

from __future__ import annotations

from litestar import Litestar
from litestar.routes import HTTPRoute


def resolve_in_turn(app: Litestar) -> None:
    for route in app.routes:
        if not isinstance(route, HTTPRoute):
            continue
        for _handler, kwargs_model in route.route_handler_map.values():
            kwargs_model.dependency_batches = [
                {dependency}
                for batch in kwargs_model.dependency_batches
                for dependency in sorted(batch, key=lambda d: d.key)
            ]
