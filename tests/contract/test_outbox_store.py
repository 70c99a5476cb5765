"""Contract of OutboxWriter + OutboxRelayStore, on every adapter (memory and PostgreSQL)."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from craig.adapters.telemetry import originating
from craig.domain.constants import OUTBOX_BATCH_SIZE
from craig.domain.events import EventEnvelope
from craig.ports.errors import BrokerUnavailable
from craig.ports.messaging import Publisher
from craig.ports.outbox import FailingCounts, FailingEvent, PublishFailure
from craig.usecases.events import OutboxRelay
from tests.support.backends import Backend

pytestmark = pytest.mark.contract


def event(aggregate: str = "a", n: int = 0) -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="craig-tests",
        type="tests.happened",
        occurred_at=datetime.now(UTC),
        payload={"n": n},
        aggregate_type="test",
        aggregate_id=aggregate,
        correlation_id=uuid.uuid4(),
    )


async def stage(backend: Backend, *envelopes: EventEnvelope, commit: bool = True) -> None:
    uow = backend.uow()
    async with uow:
        for envelope in envelopes:
            await uow.outbox.stage(envelope)
        if commit:
            await uow.commit()


async def test_committed_events_are_claimed_in_staging_order_with_their_envelope(backend: Backend) -> None:
    staged = [event(f"agg-{n}", n) for n in range(5)]
    await stage(backend, *staged[:3])
    await stage(backend, *staged[3:])
    async with backend.outbox.claim_batch(10) as batch:
        assert [r.envelope for r in batch.events] == staged
        assert all(r.attempts == 0 for r in batch.events)


async def test_rolled_back_events_do_not_exist(backend: Backend) -> None:
    await stage(backend, event(), commit=False)
    async with backend.outbox.claim_batch(10) as batch:
        assert list(batch.events) == []
    assert (await backend.outbox.stats()).pending == 0


async def test_published_events_are_not_claimed_again(backend: Backend) -> None:
    await stage(backend, event("x"), event("y"))
    async with backend.outbox.claim_batch(10) as batch:
        await batch.mark_published([r.id for r in batch.events])
    async with backend.outbox.claim_batch(10) as batch:
        assert list(batch.events) == []


async def test_a_batch_that_raises_publishes_nothing(backend: Backend) -> None:
    await stage(backend, event("x"))
    with pytest.raises(RuntimeError):
        async with backend.outbox.claim_batch(10) as batch:
            await batch.mark_published([r.id for r in batch.events])
            raise RuntimeError("relay died")
    async with backend.outbox.claim_batch(10) as batch:
        assert len(batch.events) == 1


async def test_concurrent_batches_never_share_an_event(backend: Backend) -> None:
    await stage(backend, *[event(f"agg-{n}", n) for n in range(10)])
    first_claimed = asyncio.Event()
    release = asyncio.Event()
    seen: list[set[uuid.UUID]] = []

    async def relay(hold: bool) -> None:
        async with backend.outbox.claim_batch(6) as batch:
            seen.append({r.id for r in batch.events})
            if hold:
                first_claimed.set()
                await release.wait()
            await batch.mark_published([r.id for r in batch.events])

    holder = asyncio.create_task(relay(hold=True))
    await first_claimed.wait()
    await relay(hold=False)
    release.set()
    await holder
    assert len(seen) == 2 and not (seen[0] & seen[1])
    assert len(seen[0] | seen[1]) == 10


async def test_younger_events_wait_while_an_older_event_of_their_aggregate_is_elsewhere(backend: Backend) -> None:
    older, younger, other = event("X", 1), event("X", 2), event("Y", 1)
    await stage(backend, older)
    await stage(backend, younger, other)
    holding = asyncio.Event()
    release = asyncio.Event()

    async def first_relay() -> None:
        async with backend.outbox.claim_batch(1) as batch:
            assert [r.envelope for r in batch.events] == [older]
            holding.set()
            await release.wait()
            await batch.mark_published([r.id for r in batch.events])

    task = asyncio.create_task(first_relay())
    await holding.wait()
    async with backend.outbox.claim_batch(10) as batch:
        # X's younger event is held back; Y is free to go.
        assert [r.envelope for r in batch.events] == [other]
        await batch.mark_published([r.id for r in batch.events])
    release.set()
    await task
    async with backend.outbox.claim_batch(10) as batch:
        assert [r.envelope for r in batch.events] == [younger]


async def test_failed_event_backs_off_and_blocks_its_aggregate_only(backend: Backend) -> None:
    poison, after_poison, unrelated = event("P", 1), event("P", 2), event("Q", 1)
    await stage(backend, poison, after_poison, unrelated)
    async with backend.outbox.claim_batch(10) as batch:
        ids = {r.envelope.id: r.id for r in batch.events}
        await batch.mark_failed([PublishFailure(ids[poison.id], "broker said no", timedelta(seconds=0.5))])
        await batch.mark_published([ids[unrelated.id]])
    async with backend.outbox.claim_batch(10) as batch:
        assert list(batch.events) == []  # poison is backing off; its younger sibling waits behind it
    stats = await backend.outbox.stats()
    assert stats.pending == 2 and stats.failing == 1
    await backend.sleep(0.6)
    async with backend.outbox.claim_batch(10) as batch:
        assert [r.envelope for r in batch.events] == [poison, after_poison]
        assert batch.events[0].attempts == 1


async def failing(backend: Backend, limit: int = 10) -> list[FailingEvent]:
    uow = backend.uow()
    async with uow:
        return await uow.outbox.failing(limit)


async def count_failing(backend: Backend) -> FailingCounts:
    uow = backend.uow()
    async with uow:
        return await uow.outbox.count_failing()


async def retry_failing(backend: Backend, ids: list[uuid.UUID] | None, limit: int = 10) -> list[FailingEvent]:
    uow = backend.uow()
    async with uow:
        retried = await uow.outbox.retry_failing(ids, limit)
        await uow.commit()
    return retried


async def test_failing_events_are_listed_and_a_retry_ends_their_backoff(backend: Backend) -> None:
    """What an operator sees of a failing event (why, how often, what waits behind it), and a
    retry that makes it due at once instead of after its backoff, keeping its attempts."""
    poison, behind, other, fine = event("P", 1), event("P", 2), event("Q", 1), event("R", 1)
    await stage(backend, poison, behind, other, fine)
    assert await failing(backend) == []
    async with backend.outbox.claim_batch(10) as batch:
        ids = {r.envelope.id: r.id for r in batch.events}
        hour = timedelta(hours=1)
        await batch.mark_failed(
            [PublishFailure(ids[poison.id], "broker said no", hour), PublishFailure(ids[other.id], "no confirm", hour)]
        )
        await batch.mark_published([ids[fine.id]])
    listed = await failing(backend)
    assert [(e.id, e.event_type, e.aggregate_type, e.aggregate_id) for e in listed] == [
        (poison.id, "tests.happened", "test", "P"),
        (other.id, "tests.happened", "test", "Q"),
    ]
    assert [(e.attempts, e.last_error, e.waiting_behind) for e in listed] == [
        (1, "broker said no", 1),  # its younger sibling waits behind it
        (1, "no confirm", 0),
    ]
    now = backend.clock.now() if backend.clock else datetime.now(UTC)
    assert all(e.next_attempt_at > now + timedelta(minutes=59) for e in listed)
    assert [e.id for e in await failing(backend, limit=1)] == [poison.id]
    assert await count_failing(backend) == FailingCounts(failing=2, backing_off=2)
    async with backend.outbox.claim_batch(10) as batch:
        assert list(batch.events) == []  # both backing off

    # By id: only a failing event is retried (not a published, pending or unknown one), and the
    # relays are woken as for a staged event.
    waiter = asyncio.create_task(backend.outbox.wait_for_events(timedelta(seconds=60)))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    retried = await retry_failing(backend, [poison.id, fine.id, behind.id, uuid.uuid4()])
    await asyncio.wait_for(waiter, 20)  # woken by NOTIFY; the bound only stops a hung test
    assert [(e.id, e.attempts, e.last_error) for e in retried] == [(poison.id, 1, "broker said no")]
    assert retried[0].next_attempt_at <= (backend.clock.now() if backend.clock else datetime.now(UTC))
    assert await count_failing(backend) == FailingCounts(failing=2, backing_off=1)
    assert await retry_failing(backend, [poison.id]) == []  # due already: nothing to end
    async with backend.outbox.claim_batch(10) as batch:
        assert [r.envelope for r in batch.events] == [poison, behind]  # due now, in order
        # One a relay is publishing right now is skipped, not waited for.
        assert await retry_failing(backend, [poison.id]) == []
        await batch.mark_published([r.id for r in batch.events])
    # Without ids: every failing event, up to the limit, oldest first.
    assert [e.id for e in await retry_failing(backend, None, limit=5)] == [other.id]
    async with backend.outbox.claim_batch(10) as batch:
        assert [r.envelope for r in batch.events] == [other]
        await batch.mark_published([r.id for r in batch.events])
    assert await failing(backend) == [] and await retry_failing(backend, None) == []
    assert await count_failing(backend) == FailingCounts(failing=0, backing_off=0)


async def discard_failing(backend: Backend, ids: list[uuid.UUID]) -> list[FailingEvent]:
    uow = backend.uow()
    async with uow:
        discarded = await uow.outbox.discard_failing(ids)
        await uow.commit()
    return discarded


async def test_a_discarded_failing_event_is_gone_and_its_aggregate_goes_on(backend: Backend) -> None:
    """An event that can never go (an envelope this version cannot read, one the broker refuses
    for good) is discarded by an operator; the events behind it are published in order."""
    poison, behind, other, fine = event("P", 1), event("P", 2), event("Q", 1), event("R", 1)
    await stage(backend, poison, behind, other, fine)
    async with backend.outbox.claim_batch(10) as batch:
        ids = {r.envelope.id: r.id for r in batch.events}
        hour = timedelta(hours=1)
        await batch.mark_failed(
            [
                PublishFailure(ids[poison.id], "refused for good", hour),
                PublishFailure(ids[other.id], "no confirm", hour),
            ]
        )
        await batch.mark_published([ids[fine.id]])
    # Only a failing event is discarded: not a published, a pending or an unknown one.
    waiter = asyncio.create_task(backend.outbox.wait_for_events(timedelta(seconds=60)))
    await asyncio.sleep(0.05)
    discarded = await discard_failing(backend, [poison.id, fine.id, behind.id, uuid.uuid4()])
    await asyncio.wait_for(waiter, 20)  # the relays are woken: what waited behind it may go
    assert [(e.id, e.attempts, e.last_error, e.waiting_behind) for e in discarded] == [
        (poison.id, 1, "refused for good", 1)
    ]
    assert [e.id for e in await failing(backend)] == [other.id]
    async with backend.outbox.claim_batch(10) as batch:
        assert [r.envelope for r in batch.events] == [behind]  # its aggregate goes on
        # One a relay holds right now is skipped, not waited for.
        await batch.mark_failed([PublishFailure(batch.events[0].id, "no confirm", timedelta(0))])
    async with backend.outbox.claim_batch(10) as batch:
        assert [r.envelope for r in batch.events] == [behind]
        assert await discard_failing(backend, [behind.id]) == []
        await batch.mark_published([r.id for r in batch.events])
    assert await discard_failing(backend, [poison.id]) == []  # gone already
    assert await count_failing(backend) == FailingCounts(failing=1, backing_off=1)


async def test_a_backoff_runs_from_when_the_failure_is_recorded_not_from_the_claim(backend: Backend) -> None:
    slow = event("S", 1)
    await stage(backend, slow)
    async with backend.outbox.claim_batch(10) as batch:
        await backend.sleep(2.5)  # the batch's publishes take a while (a confirm timing out)
        await batch.mark_failed([PublishFailure(batch.events[0].id, "no confirm", timedelta(seconds=2))])
    async with backend.outbox.claim_batch(10) as batch:
        assert list(batch.events) == []  # still backing off: the 2 s began when it was recorded
    await backend.sleep(2.1)
    async with backend.outbox.claim_batch(10) as batch:
        assert [r.envelope for r in batch.events] == [slow]


async def test_purge_removes_published_rows_past_retention(backend: Backend) -> None:
    await stage(backend, event("old"), event("pending"))
    async with backend.outbox.claim_batch(1) as batch:
        await batch.mark_published([r.id for r in batch.events])
    await backend.sleep(0.3)
    assert await backend.outbox.purge_published(timedelta(seconds=0.2), 100) == 1
    assert (await backend.outbox.stats()).pending == 1


async def test_waiting_relays_wake_when_events_commit(backend: Backend) -> None:
    waiter = asyncio.create_task(backend.outbox.wait_for_events(timedelta(seconds=60)))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await stage(backend, event())
    await asyncio.wait_for(waiter, 20)  # woken by NOTIFY; the bound only stops a hung test


async def test_stage_many_keeps_the_given_order(backend: Backend) -> None:
    staged = [event(f"agg-{n % 3}", n) for n in range(7)]
    uow = backend.uow()
    async with uow:
        await uow.outbox.stage(staged[0])
        await uow.outbox.stage_many(staged[1:])
        await uow.commit()
    async with backend.outbox.claim_batch(100) as batch:
        assert [r.envelope for r in batch.events] == staged


class _FailingFor(Publisher):
    """A publisher that refuses every event of one aggregate and records the others."""

    def __init__(self, failing: str) -> None:
        self.failing = failing
        self.published: list[EventEnvelope] = []

    async def publish(self, envelope: EventEnvelope) -> None:
        if envelope.aggregate_id == self.failing:
            raise BrokerUnavailable("the broker refuses this one")
        self.published.append(envelope)


async def test_a_thousand_held_back_events_do_not_stall_another_aggregate(backend: Backend) -> None:
    poison = [event("P", n) for n in range(1000)]
    other = event("Q", 0)
    uow = backend.uow()
    async with uow:
        await uow.outbox.stage_many(poison)
        await uow.commit()
    await stage(backend, other)  # staged after all 1,000: the oldest rows are all P's
    publisher = _FailingFor("P")
    relay = OutboxRelay(backend.outbox, publisher, batch_size=OUTBOX_BATCH_SIZE, jitter=lambda: 1.0)

    first = await relay.drain_once()  # P's head fails and backs off; its batch-mates wait
    assert first.failed == 1 and first.published == 0
    second = await relay.drain_once()
    assert [e.id for e in publisher.published] == [other.id]
    assert second.claimed == 1
    stats = await backend.outbox.stats()
    assert stats.pending == 1000 and stats.failing == 1


async def test_a_relay_skips_the_aggregates_another_relay_holds(backend: Backend) -> None:
    held = [event("X", n) for n in range(20)]
    free = event("Y", 0)
    uow = backend.uow()
    async with uow:
        await uow.outbox.stage_many(held)
        await uow.commit()
    await stage(backend, free)
    holding, release = asyncio.Event(), asyncio.Event()

    async def first_relay() -> None:
        async with backend.outbox.claim_batch(5) as batch:
            assert [r.envelope for r in batch.events] == held[:5]
            holding.set()
            await release.wait()
            await batch.mark_published([r.id for r in batch.events])

    task = asyncio.create_task(first_relay())
    await holding.wait()
    async with backend.outbox.claim_batch(5) as batch:
        # X's younger events are not claimed (and dropped): the batch goes on to Y.
        assert [r.envelope for r in batch.events] == [free]
        await batch.mark_published([r.id for r in batch.events])
    release.set()
    await task
    async with backend.outbox.claim_batch(5) as batch:
        assert [r.envelope for r in batch.events] == held[5:10]


async def test_several_relays_with_failing_publishes_keep_order_per_aggregate(backend: Backend) -> None:
    aggregates = [f"agg-{n}" for n in range(8)]
    staged = [event(aggregate, n) for n in range(40) for aggregate in aggregates]
    for start in range(0, len(staged), 50):
        uow = backend.uow()
        async with uow:
            await uow.outbox.stage_many(staged[start : start + 50])
            await uow.commit()
    rng = random.Random(7)
    published: list[EventEnvelope] = []
    failures: Counter[uuid.UUID] = Counter()

    class Flaky(Publisher):
        """Fails one publish in ten, each event twice at most (backoffs of 0.5 s and 1 s)."""

        async def publish(self, envelope: EventEnvelope) -> None:
            await asyncio.sleep(rng.random() / 1000)
            if failures[envelope.id] < 2 and rng.random() < 0.1:
                failures[envelope.id] += 1
                raise BrokerUnavailable("flaky")
            published.append(envelope)

    relays = [OutboxRelay(backend.outbox, Flaky(), batch_size=7, jitter=lambda: 0.0) for _ in range(4)]

    async def drain(relay: OutboxRelay) -> None:
        for _ in range(2000):
            if (await backend.outbox.stats()).pending == 0:
                return
            report = await relay.drain_once()
            if not report.published:
                await backend.sleep(0.02)  # lets the backoffs run out

    await asyncio.gather(*(drain(relay) for relay in relays))
    assert (await backend.outbox.stats()).pending == 0
    first_seen: dict[str, list[int]] = {}
    seen: set[uuid.UUID] = set()
    for envelope in published:
        if envelope.id not in seen:
            seen.add(envelope.id)
            first_seen.setdefault(envelope.aggregate_id, []).append(envelope.payload["n"])
    assert first_seen == {aggregate: list(range(40)) for aggregate in aggregates}


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def test_events_staged_for_a_request_carry_its_id_and_trace_context(backend: Backend) -> None:
    own = event("own")  # an event with a correlation id of its own keeps it
    bare = [attrs.evolve(event(f"bare-{n}"), correlation_id=None) for n in range(3)]
    traced = attrs.evolve(event("traced"), correlation_id=None, traceparent=TRACEPARENT)
    with originating("req-42"):
        await stage(backend, own, bare[0], traced)
        uow = backend.uow()
        async with uow:
            await uow.outbox.stage_many(bare[1:])
            await uow.commit()
    await stage(backend, attrs.evolve(event("outside"), correlation_id=None))
    async with backend.outbox.claim_batch(10) as batch:
        claimed = {r.envelope.aggregate_id: r.envelope for r in batch.events}
    assert claimed["own"].correlation_id == own.correlation_id
    assert [claimed[f"bare-{n}"].correlation_id for n in range(3)] == ["req-42"] * 3
    assert claimed["traced"].correlation_id == "req-42" and claimed["traced"].traceparent == TRACEPARENT
    assert claimed["outside"].correlation_id is None
    assert "traceparent" not in claimed["traced"].to_message()


class Rounds(Publisher):
    """Records each ``publish_many`` call and refuses the events ``refuse`` picks (a nack)."""

    def __init__(self, refuse: Callable[[EventEnvelope], bool]) -> None:
        self.refuse = refuse
        self.calls: list[list[EventEnvelope]] = []

    async def publish(self, envelope: EventEnvelope) -> None:
        raise AssertionError("the relay publishes its batches with publish_many")

    async def publish_many(self, envelopes: Sequence[EventEnvelope], *, window: int) -> list[Exception | None]:
        self.calls.append(list(envelopes))
        return [BrokerUnavailable("nacked") if self.refuse(e) else None for e in envelopes]


async def test_a_batch_goes_out_one_event_per_aggregate_at_a_time_and_only_confirmed_events_are_marked(
    backend: Backend,
) -> None:
    staged = [event(f"agg-{a}", n) for n in range(3) for a in range(4)]
    uow = backend.uow()
    async with uow:
        await uow.outbox.stage_many(staged)
        await uow.commit()
    publisher = Rounds(lambda e: e.aggregate_id == "agg-1" and e.payload["n"] == 1)
    report = await OutboxRelay(backend.outbox, publisher, batch_size=100, jitter=lambda: 0.0).drain_once()
    # Never two events of one aggregate in flight together; each aggregate's events in order.
    assert all(len({e.aggregate_id for e in call}) == len(call) for call in publisher.calls)
    assert [[e.payload["n"] for e in call] for call in publisher.calls] == [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2]]
    # agg-1's second event was nacked: it backs off, its third was never published.
    assert (report.claimed, report.published, report.failed) == (12, 10, 1)
    stats = await backend.outbox.stats()
    assert stats.pending == 2 and stats.failing == 1


async def test_a_publisher_that_fails_as_a_whole_leaves_the_batch_pending(backend: Backend) -> None:
    await stage(backend, event("x", 0), event("y", 0))

    class Down(Publisher):
        async def publish(self, envelope: EventEnvelope) -> None:
            raise AssertionError("not used")

        async def publish_many(self, envelopes: Sequence[EventEnvelope], *, window: int) -> list[Exception | None]:
            raise BrokerUnavailable("connection lost")

    report = await OutboxRelay(backend.outbox, Down(), batch_size=10, jitter=lambda: 0.0).drain_once()
    assert (report.published, report.failed) == (0, 2)
    stats = await backend.outbox.stats()
    assert stats.pending == 2 and stats.failing == 2
