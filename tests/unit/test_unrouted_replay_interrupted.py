"""`craig unrouted replay` stopped half way (Ctrl-C) says which events it already published
again: it printed nothing, and an operator could only guess what had reached the consumers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from craig.domain.events import EventEnvelope
from craig.entrypoints.cli.unrouted import replay_unrouted
from craig.ports.messaging import Subscription
from craig.ports.unit_of_work import UnitOfWork
from tests.support.apps import make_container, make_settings
from tests.support.probe import probe_event

pytestmark = pytest.mark.unit


async def _take(_envelope: EventEnvelope, _uow: UnitOfWork) -> None:
    return None


async def test_an_interrupted_replay_prints_what_it_published(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    container = make_container(make_settings("memory", tmp_path))
    bus = container.event_bus()
    await bus.connect([])
    events = [probe_event(f"late-{n}") for n in range(4)]
    for envelope in events:
        await bus.publish(envelope)  # no consumer yet: kept as unrouted
    container.subscriptions.override(providers.Object([Subscription("late", ("tests.*",), _take)]))
    published, stuck = [], asyncio.Event()
    publish = bus.publish

    async def third_never_confirmed(envelope: EventEnvelope, *args: Any, **kwargs: Any) -> None:
        if len(published) == 2:
            stuck.set()
            await asyncio.Event().wait()  # the broker never confirms: the operator presses Ctrl-C
        await publish(envelope, *args, **kwargs)
        published.append(envelope.id)

    monkeypatch.setattr(bus, "publish", third_never_confirmed)
    replay = asyncio.create_task(replay_unrouted(container, None, 10))
    await asyncio.wait_for(stuck.wait(), 30)
    replay.cancel()
    with pytest.raises(asyncio.CancelledError):
        await replay
    out = capsys.readouterr().out
    assert "interrupted: 2 published again before the interruption" in out, out
    assert all(str(envelope.id) in out for envelope in events[:2]), out
    assert not any(str(envelope.id) in out for envelope in events[2:]), out
