"""Every route resolves its dependencies one after another: no anyio task group per request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar, get
from litestar._kwargs import kwargs_model
from litestar.di import NamedDependency, Provide
from litestar.routes import HTTPRoute
from litestar.testing import TestClient

from craig.entrypoints.http.app import create_app
from craig.entrypoints.http.dependency_order import resolve_in_turn
from tests.support.apps import auth, make_container, make_settings, serving

pytestmark = pytest.mark.unit


@pytest.fixture
def no_task_groups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Litestar's task group, made to fail if it is ever used; yields the count of attempts."""
    used: list[int] = []

    def refused() -> Any:
        used.append(1)
        raise AssertionError("a dependency batch was resolved in a task group")

    monkeypatch.setattr(kwargs_model, "create_task_group", refused)
    yield used


def test_every_route_of_craig_resolves_one_dependency_at_a_time(tmp_path: Path) -> None:
    app = create_app(make_container(make_settings("memory", tmp_path)), manage_runtime=False)
    batches = [
        batch
        for route in app.routes
        if isinstance(route, HTTPRoute)
        for _, model in route.route_handler_map.values()
        for batch in model.dependency_batches
    ]
    assert batches and all(len(batch) == 1 for batch in batches)


async def test_a_request_with_several_dependencies_starts_no_task_group(
    tmp_path: Path, no_task_groups: list[int]
) -> None:
    async with serving("memory", tmp_path) as (container, client):
        opened = await client.post("/v1/cases", json={"title": "Doe family"}, headers=auth(container))
        assert opened.status_code == 201, opened.text
        # principal, unit of work, cursors and two use cases
        listed = await client.get("/v1/cases", params={"limit": 5}, headers=auth(container))
        assert listed.status_code == 200, listed.text
    assert no_task_groups == []


def _two_at_one_depth() -> Litestar:
    async def one() -> int:
        return 1

    async def another() -> int:
        return 1

    @get("/", dependencies={"a": Provide(one), "b": Provide(another)})
    async def both(a: NamedDependency[int], b: NamedDependency[int]) -> int:
        return a + b

    return Litestar([both])


def test_without_it_litestar_would_use_one(no_task_groups: list[int]) -> None:
    """The control: the fixture does catch a task group, and the split removes it."""
    with TestClient(_two_at_one_depth()) as client:
        assert client.get("/").status_code == 500
    assert no_task_groups == [1]
    app = _two_at_one_depth()
    resolve_in_turn(app)
    with TestClient(app) as client:
        assert client.get("/").json() == 2
    assert no_task_groups == [1]
