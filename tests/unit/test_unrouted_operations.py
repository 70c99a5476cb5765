"""Which consumers a replay of an unrouted event targets, and what an operator is told when none."""

from __future__ import annotations

from typing import Any

import pytest

from craig.ports.messaging import Subscription
from craig.usecases.events.unrouted_operations import UnroutedOperations

pytestmark = pytest.mark.unit


async def _ignore(*_args: Any) -> None:
    return None


def test_only_durable_consumers_are_a_replays_target_and_a_broadcast_only_type_says_so() -> None:
    operations = UnroutedOperations(
        unrouted=None,  # type: ignore[arg-type]  # not used here
        bus=None,  # type: ignore[arg-type]
        subscriptions=[
            Subscription("rules-cache", ("rules.*",), _ignore, broadcast=True),
            Subscription("reports", ("cases.*", "late.arrival"), _ignore),
        ],
        uow_factory=None,  # type: ignore[arg-type]
    )
    assert operations.consumers_of("cases.opened") == ["reports"]
    assert operations.consumers_of("late.arrival") == ["reports"]
    assert operations.consumers_of("rules.cache_invalidated") == []
    assert "only a broadcast consumer (rules-cache)" in operations._why_kept("rules.cache_invalidated")
    assert operations._why_kept("nobody.listens") == "no consumer of this deployment takes 'nobody.listens'"
