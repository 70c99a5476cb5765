"""Every contract suite runs once per adapter: ``backend`` is parametrized over them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.backends import Backend, memory_backend, postgres_backend


@pytest.fixture(params=["memory", "postgres"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "memory":
        async with memory_backend() as harness:
            yield harness
    else:
        url = request.getfixturevalue("pg_url")
        async with postgres_backend(url) as harness:
            yield harness
