"""Contract of the EventBus (publisher + consumers) — outbox relay, inbox, retries, DLX, replay —
in-process bus over the memory and the PostgreSQL inbox, and RabbitMQ (FastStream) for real."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from dependency_injector import providers
from sqlalchemy import text

from craig.adapters.inprocess import bus as inprocess_bus
from craig.adapters.inprocess.bus import InProcessBus
from craig.domain.events import UNREADABLE_ENVELOPE, EventEnvelope
from craig.entrypoints import metrics
from craig.entrypoints.container import Container
from craig.entrypoints.operations import collect_status, metric_refreshers
from craig.entrypoints.workers.messaging import consumers_running, relay_loop
from craig.entrypoints.workers.runner import _loops_running
from craig.ports.messaging import UNROUTED, NonRetryable, Subscription
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.events import stage_event
from tests.support.buses import BUS_KINDS, bus_container

pytestmark = pytest.mark.contract


class Recorder:
    """A consumer whose handler fails on demand and has a real database effect."""

    def __init__(self, fail_times: int = 0, always: bool = False, poison: bool = False) -> None:
        self.calls: Counter[uuid.UUID] = Counter()
        self.fail_times = fail_times
        self.always = always
        self.poison = poison
        self.done = asyncio.Event()

    async def __call__(self, envelope: EventEnvelope, uow: UnitOfWork) -> None:
        self.calls[envelope.id] += 1
        if self.poison:
            raise NonRetryable("payload makes no sense")
        if self.always or self.calls[envelope.id] <= self.fail_times:
            raise RuntimeError(f"attempt {self.calls[envelope.id]} failed")
        await stage_event(uow, _effect(envelope))  # the handler's database effect
        self.done.set()


def _effect(cause: EventEnvelope) -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="craig-tests",
        type="effects.recorded",
        occurred_at=datetime.now(UTC),
        payload={"cause": str(cause.id)},
        aggregate_type="effect",
        aggregate_id=str(cause.id),
        causation_id=cause.id,
    )


def _event(kind: str = "tests.happened", aggregate: str = "agg") -> EventEnvelope:
    return EventEnvelope(
        id=uuid.uuid4(),
        source="craig-tests",
        type=kind,
        occurred_at=datetime.now(UTC),
        payload={"x": 1},
        aggregate_type="test",
        aggregate_id=aggregate,
    )


async def _effects(container: Container, cause: uuid.UUID) -> int:
    """Outbox rows (published or not) whose causation is ``cause``: the handler's effects."""
    if container.settings().profile.value == "memory":
        rows = container.memory_database().raw("event_outbox").values()
        return sum(1 for r in rows if r.envelope.causation_id == cause)
    async with container.postgres().connect() as conn:
        result = await conn.execute(
            text("SELECT count(*) FROM event_outbox WHERE envelope->>'causation_id' = :cause"), {"cause": str(cause)}
        )
        return int(result.scalar_one())


async def _eventually(check: Callable[[], Awaitable[bool]], what: str, seconds: float = 30) -> None:
    """Poll until ``check`` holds (a bound that only stops a hung test, not a timing claim)."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.05)


@pytest.fixture(params=BUS_KINDS)
async def bus(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Container]:
    async with bus_container(request.param, request, tmp_path) as container:
        yield container


@pytest.fixture
def register_queues(request: pytest.FixtureRequest) -> Callable[[Container, str], None]:
    def register(container: Container, consumer: str) -> None:
        bus = container.event_bus()
        if hasattr(bus, "broker"):
            names = request.getfixturevalue("broker_names")
            names.queues.extend(
                [f"{bus.prefix}.{consumer}", *(f"{bus.prefix}.{consumer}.retry.{n}" for n in range(1, 6))]
            )

    return register


async def _publish_through_outbox(container: Container, *envelopes: EventEnvelope) -> None:
    uow = container.uow()
    async with uow:
        for envelope in envelopes:
            await stage_event(uow, envelope)
        await uow.commit()


async def test_an_event_staged_and_committed_is_delivered_once(bus: Container, register_queues) -> None:
    recorder = Recorder()
    register_queues(bus, "recorder")
    subscription = Subscription("recorder", ("tests.*",), recorder)
    envelope = _event()
    async with consumers_running(bus, subscriptions=[subscription]), _loops_running(bus, [relay_loop(bus)]):
        await _publish_through_outbox(bus, envelope)
        await _eventually(lambda: _has_effect(bus, envelope.id), "delivery")
    assert recorder.calls[envelope.id] == 1


async def _published(container: Container, event_id: uuid.UUID) -> bool:
    """The relay marked the outbox row of ``event_id`` published."""
    if container.settings().profile.value == "memory":
        return container.memory_database().raw("event_outbox")[event_id].published_at is not None
    async with container.postgres().connect() as conn:
        result = await conn.execute(text("SELECT published_at FROM event_outbox WHERE id = :id"), {"id": event_id})
        return result.scalar_one() is not None


async def _has_effect(container: Container, cause: uuid.UUID) -> bool:
    return await _effects(container, cause) == 1


async def test_a_handler_failing_three_times_is_processed_once_with_error_count_3(
    bus: Container, register_queues
) -> None:
    recorder = Recorder(fail_times=3)
    register_queues(bus, "recorder")
    subscription = Subscription("recorder", ("tests.*",), recorder)
    envelope = _event()
    async with consumers_running(bus, subscriptions=[subscription]):
        await bus.event_bus().publish(envelope)
        await _eventually(lambda: _has_effect(bus, envelope.id), "processing after 3 failures")
    assert recorder.calls[envelope.id] == 4
    record = await _inbox_row(bus, "recorder", envelope)
    assert record.processed_at is not None and record.error_count == 3 and record.failed_at is None


async def _inbox_row(container: Container, consumer: str, envelope: EventEnvelope):  # type: ignore[no-untyped-def]
    uow = container.uow()
    async with uow:
        record = await uow.inbox.begin_attempt(consumer, envelope, "peek")
    return record  # the block was not committed: nothing changed


async def test_an_always_failing_handler_is_retried_5_times_then_dead_lettered_and_replayable(
    bus: Container, register_queues
) -> None:
    recorder = Recorder(always=True)
    register_queues(bus, "recorder")
    subscription = Subscription("recorder", ("tests.*",), recorder)
    envelope = _event()
    dead_letters = bus.dead_letters()
    async with consumers_running(bus, subscriptions=[subscription]):
        await bus.event_bus().publish(envelope)
        await _eventually(lambda: _count_is(dead_letters, 1), "a dead letter")
        await asyncio.sleep(0.5)  # no further deliveries may follow
        assert recorder.calls[envelope.id] == 6  # the first attempt and exactly 5 retries
        letters = await dead_letters.peek(10)
        assert len(letters) == 1
        letter = letters[0]
        assert letter.event_id == envelope.id and letter.retry_count == 5
        assert "attempt 6 failed" in letter.last_error and letter.first_failed_at is not None
        assert letter.queue
        record = await _inbox_row(bus, "recorder", envelope)
        assert record.failed_at is not None and record.error_count == 6

        recorder.always = False
        replayed = await bus.dead_letter_operations().replay(None, 10)
        assert [r.event_id for r in replayed] == [envelope.id]
        await _eventually(lambda: _has_effect(bus, envelope.id), "processing after replay")
    assert await dead_letters.count() == 0
    record = await _inbox_row(bus, "recorder", envelope)
    assert record.processed_at is not None and record.failed_at is None


async def test_a_dead_letter_that_can_never_succeed_is_discarded_for_good(bus: Container, register_queues) -> None:
    """Two consumers dead-letter one event (two letters, one id) and a third letter stands
    apart: an id several letters share is discarded only with the queue that names one."""
    first, second = Recorder(poison=True), Recorder(poison=True)
    register_queues(bus, "recorder")
    register_queues(bus, "second")
    subscriptions = [Subscription("recorder", ("tests.*",), first), Subscription("second", ("tests.shared",), second)]
    shared, other = _event("tests.shared"), _event()
    dead_letters = bus.dead_letters()
    async with consumers_running(bus, subscriptions=subscriptions):
        await bus.event_bus().publish(shared)
        await bus.event_bus().publish(other)
        await _eventually(lambda: _count_is(dead_letters, 3), "three dead letters")
        operations = bus.dead_letter_operations()
        assert await operations.discard([shared.id]) == []  # which of the two? neither
        await _eventually(lambda: _count_is(dead_letters, 3), "every letter put back")
        queues = {letter.consumer: letter.queue for letter in await dead_letters.peek(10)}
        gone = await operations.discard([shared.id, other.id, uuid.uuid4()], queue=queues["second"])
        assert [(letter.event_id, letter.consumer) for letter in gone] == [(shared.id, "second")]
        await _eventually(lambda: _count_is(dead_letters, 2), "the two others put back")
        left = sorted((str(letter.event_id), letter.consumer) for letter in await dead_letters.peek(10))
        assert left == sorted([(str(shared.id), "recorder"), (str(other.id), "recorder")])
        assert await operations.discard([other.id]) != []
        await _eventually(lambda: _count_is(dead_letters, 1), "one letter left")
        assert first.calls[other.id] == 1  # discarding never delivers it again


async def _count_is(dead_letters, n: int) -> bool:  # type: ignore[no-untyped-def]
    return await dead_letters.count() == n


async def test_a_non_retryable_error_goes_to_the_dlx_at_once(bus: Container, register_queues) -> None:
    recorder = Recorder(poison=True)
    register_queues(bus, "recorder")
    subscription = Subscription("recorder", ("tests.*",), recorder)
    envelope = _event()
    async with consumers_running(bus, subscriptions=[subscription]):
        await bus.event_bus().publish(envelope)
        await _eventually(lambda: _count_is(bus.dead_letters(), 1), "a dead letter")
        letters = await bus.dead_letters().peek(10)
    assert recorder.calls[envelope.id] == 1
    assert letters[0].retry_count == 0 and "NonRetryable" in letters[0].last_error


async def test_a_duplicate_delivery_has_its_effects_once(bus: Container, register_queues) -> None:
    recorder = Recorder()
    register_queues(bus, "recorder")
    subscription = Subscription("recorder", ("tests.*",), recorder)
    envelope = _event()
    async with consumers_running(bus, subscriptions=[subscription]):
        await bus.event_bus().publish(envelope)
        await bus.event_bus().publish(envelope)  # e.g. a relay died between publish and commit
        await _eventually(lambda: _has_effect(bus, envelope.id), "processing")
        await asyncio.sleep(0.5)
    assert await _effects(bus, envelope.id) == 1
    assert recorder.calls[envelope.id] == 1


async def test_events_nobody_subscribes_to_are_not_delivered(bus: Container, register_queues) -> None:
    recorder = Recorder()
    register_queues(bus, "recorder")
    subscription = Subscription("recorder", ("tests.*",), recorder)
    async with consumers_running(bus, subscriptions=[subscription]):
        await bus.event_bus().publish(_event(kind="other.thing"))
        wanted = _event()
        await bus.event_bus().publish(wanted)
        await _eventually(lambda: _has_effect(bus, wanted.id), "processing")
    assert list(recorder.calls) == [wanted.id]


async def test_a_broadcast_delivery_on_the_in_process_bus_settles_its_own_inbox_row(bus: Container) -> None:
    if hasattr(bus.event_bus(), "broker"):
        pytest.skip("RabbitMQ keeps its queues in the broker, not in the inbox table")
    lease = timedelta(milliseconds=200)
    short_lease = InProcessBus(bus.inbox_store(), instance_id=bus.instance_id(), lease=lease)
    bus.event_bus.override(providers.Object(short_lease))
    recorder = Recorder()
    subscription = Subscription("recorder", ("tests.*",), recorder, broadcast=True)
    envelope = _event()
    try:
        async with consumers_running(bus, subscriptions=[subscription]):
            await short_lease.publish(envelope)
            await _eventually(lambda: _has_effect(bus, envelope.id), "delivery")
        await asyncio.sleep(lease.total_seconds() * 2)
        store = bus.inbox_store()
        # Nothing is left to deliver again once the lease is over, under either key.
        key = subscription.inbox_consumer(bus.instance_id())
        assert await store.claim_due([key, subscription.consumer], 10, lease) == []
        assert recorder.calls[envelope.id] == 1
    finally:
        bus.event_bus.reset_override()


async def test_an_event_no_subscription_takes_is_kept_as_unrouted_and_counted(bus: Container, register_queues) -> None:
    recorder = Recorder()
    register_queues(bus, "recorder")
    register_queues(bus, "effects")

    async def ignore(envelope: EventEnvelope, uow: UnitOfWork) -> None:
        return None

    subscriptions = [Subscription("recorder", ("tests.*",), recorder), Subscription("effects", ("effects.*",), ignore)]
    nobodys = _event(kind="nobody.listens")
    wanted = _event()
    unrouted = bus.unrouted_events()
    async with consumers_running(bus, subscriptions=subscriptions), _loops_running(bus, [relay_loop(bus)]):
        await _publish_through_outbox(bus, nobodys, wanted)
        await _eventually(lambda: _has_effect(bus, wanted.id), "delivery of the wanted event")
        await _eventually(lambda: _count_is(unrouted, 1), "the unwanted event kept as unrouted")
    assert await _published(bus, nobodys.id) and await _published(bus, wanted.id)  # and neither lost
    assert list(recorder.calls) == [wanted.id]
    status = await collect_status(bus)
    assert status["unrouted events"]["events no subscription took"] == 1
    assert status["unrouted events"]["kept in"] == unrouted.location
    exposition = (await metrics.render(metric_refreshers(bus))).decode()
    assert "craig_unrouted_events 1.0" in exposition.splitlines()


async def test_publish_many_gives_one_outcome_per_event_and_delivers_each_once(bus: Container, register_queues) -> None:
    recorder = Recorder()
    register_queues(bus, "recorder")
    register_queues(bus, "effects")

    async def ignore(envelope: EventEnvelope, uow: UnitOfWork) -> None:
        return None

    subscriptions = [Subscription("recorder", ("tests.*",), recorder), Subscription("effects", ("effects.*",), ignore)]
    wanted = [_event(aggregate=f"agg-{n}") for n in range(40)]
    nobodys = _event(kind="nobody.listens")
    unrouted = bus.unrouted_events()
    async with consumers_running(bus, subscriptions=subscriptions):
        publisher = bus.event_bus()
        assert await publisher.publish_many([], window=8) == []
        outcomes = await publisher.publish_many([*wanted, nobodys], window=8)
        assert outcomes == [None] * (len(wanted) + 1)  # one outcome per envelope: all confirmed
        for envelope in wanted:
            await _eventually(lambda envelope=envelope: _has_effect(bus, envelope.id), "delivery")  # type: ignore[misc]
        await _eventually(lambda: _count_is(unrouted, 1), "the unwanted event kept as unrouted")
    assert sorted(recorder.calls.values()) == [1] * len(wanted)
    assert set(recorder.calls) == {envelope.id for envelope in wanted}


async def test_an_envelope_that_cannot_be_encoded_fails_alone_in_publish_many(bus: Container, register_queues) -> None:
    """One envelope whose message cannot be made (a payload JSON cannot hold) is that envelope's
    outcome; before, on RabbitMQ, it failed every event of the round with it."""
    if bus.settings().profile.value == "memory":
        pytest.skip("the memory bus keeps envelopes as objects: it encodes none")
    register_queues(bus, "recorder")
    recorder = Recorder()
    fine = [_event(aggregate=f"agg-{n}") for n in range(3)]
    broken = attrs.evolve(_event(aggregate="broken"), payload={"x": {1, 2}})  # a set: no JSON
    async with consumers_running(bus, subscriptions=[Subscription("recorder", ("tests.*",), recorder)]):
        outcomes = await bus.event_bus().publish_many([fine[0], broken, *fine[1:]], window=8)
        assert [o is None for o in outcomes] == [True, False, True, True], outcomes
        for envelope in fine:
            await _eventually(lambda envelope=envelope: _has_effect(bus, envelope.id), "delivery")  # type: ignore[misc]


async def test_an_unrouted_event_is_replayed_once_a_consumer_takes_it_and_discarded_for_good(
    bus: Container, register_queues
) -> None:
    """Published while no consumer took their types, two events wait as unrouted; a consumer of
    one type is deployed: a replay delivers that one (once) and leaves the other, named; a
    discard removes the other for good."""
    recorder = Recorder()
    register_queues(bus, "recorder")
    late, nobodys = _event("late.arrival"), _event("nobody.listens")
    unrouted = bus.unrouted_events()
    await bus.event_bus().connect([])
    for envelope in (nobodys, late):
        await bus.event_bus().publish(envelope)
    await _eventually(lambda: _count_is(unrouted, 2), "both kept as unrouted")
    assert [(e.event_id, e.event_type) for e in await unrouted.peek(10)] == [
        (nobodys.id, "nobody.listens"),
        (late.id, "late.arrival"),
    ]
    # Peeking puts them back (on RabbitMQ the count dips until the broker has requeued them).
    await _eventually(lambda: _count_is(unrouted, 2), "both put back after the peek")

    subscription = Subscription("recorder", ("late.*",), recorder)
    bus.subscriptions.override(providers.Object([subscription]))  # the consumer is deployed
    operations = bus.unrouted_operations()
    assert operations.consumers_of("late.arrival") == ["recorder"] and operations.consumers_of("nobody.listens") == []
    async with consumers_running(bus, subscriptions=[subscription]):
        report = await operations.replay(None, 1)  # the one it kept, older, does not count toward 1
        assert [e.event_id for e in report.replayed] == [late.id]
        assert [(k.event.event_id, "no consumer" in k.why) for k in report.kept] == [(nobodys.id, True)]
        await _eventually(lambda: _has_effect(bus, late.id), "the replayed event delivered")
        await _eventually(lambda: _count_is(unrouted, 1), "only the event nobody takes left")
        assert (await operations.replay([late.id], 10)).replayed == []  # gone from the unrouted events
        await _eventually(lambda: _count_is(unrouted, 1), "the other put back after the replay")
        gone = await operations.discard([nobodys.id, uuid.uuid4()])
        assert [e.event_id for e in gone] == [nobodys.id]
        await _eventually(lambda: _count_is(unrouted, 0), "none left")
    assert recorder.calls[late.id] == 1


async def test_the_in_process_take_pages_through_the_unrouted_events_in_their_order(
    bus: Container, register_queues, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-process bus reads its unrouted events a page at a time (it read the whole scan,
    up to 100,000 envelopes, at once): events kept or not asked for are passed over across
    pages, and the order stays oldest first."""
    if hasattr(bus.event_bus(), "broker"):
        pytest.skip("RabbitMQ takes unrouted events from its queue one message at a time")
    monkeypatch.setattr(inprocess_bus, "UNROUTED_TAKE_PAGE_ROWS", 2)
    store, pages = bus.inbox_store(), []
    read = store.waiting_rows

    async def counted(consumer: str, limit: int, **after: Any) -> list[Any]:
        pages.append(limit)
        return await read(consumer, limit, **after)

    monkeypatch.setattr(store, "waiting_rows", counted)
    recorder = Recorder()
    register_queues(bus, "recorder")
    await bus.event_bus().connect([])
    published = []
    for n in range(9):  # nobody, late, late, nobody, late, late, nobody, late, late
        published.append(_event("nobody.listens" if n % 3 == 0 else "late.arrival"))
        await bus.event_bus().publish(published[-1])
    await _eventually(lambda: _count_is(bus.unrouted_events(), 9), "all kept as unrouted")
    late = [e.id for e in published if e.type == "late.arrival"]
    nobodys = [e.id for e in published if e.type == "nobody.listens"]
    subscription = Subscription("recorder", ("late.*",), recorder)
    bus.subscriptions.override(providers.Object([subscription]))
    operations = bus.unrouted_operations()
    async with consumers_running(bus, subscriptions=[subscription]):
        first = await operations.replay(None, 4)
        assert [e.event_id for e in first.replayed] == late[:4]
        assert [k.event.event_id for k in first.kept] == nobodys[:2]  # the scan stopped at the fourth
        assert [e.event_id for e in (await operations.replay([late[5], uuid.uuid4()], 10)).replayed] == [late[5]]
        assert [e.event_id for e in (await operations.discard(nobodys[::-1]))] == nobodys
        assert set(pages) == {2}  # the take read two rows at a time (peek reads its limit)
        assert [e.event_id for e in await bus.unrouted_events().peek(10)] == [late[4]]
        for event_id in [*late[:4], late[5]]:
            await _eventually(lambda event_id=event_id: _has_effect(bus, event_id), "delivered")  # type: ignore[misc]
    assert sorted(recorder.calls.values()) == [1] * 5


async def test_an_inbox_row_no_version_can_read_is_dead_lettered_and_blocks_nothing(bus: Container) -> None:
    """A row whose stored envelope cannot be read (written by another version of Craig, or by
    hand) once failed every claim of its consumer, so the in-process consumer delivered nothing
    more. It is now dead-lettered for an operator (listed, discardable), and the rest flow."""
    if bus.settings().profile.value == "memory" or hasattr(bus.event_bus(), "broker"):
        pytest.skip("only the in-process bus on PostgreSQL keeps envelopes as JSON a version may not read")
    recorder = Recorder()
    subscription = Subscription("recorder", ("tests.*",), recorder)
    consumer = subscription.inbox_consumer(bus.instance_id())
    unreadable, deep, unrouted = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    nested = "[" * 5000 + "]" * 5000  # deeper than Python's JSON parser goes
    async with bus.postgres().transaction() as conn:
        for key, ident, envelope in (
            (consumer, unreadable, '{"id": "not a uuid", "type": 7}'),
            (consumer, deep, nested),
            (UNROUTED, unrouted, '{"id": "not a uuid", "type": 7}'),
        ):
            await conn.execute(
                text(
                    "INSERT INTO event_inbox (consumer, event_id, envelope, queue, received_at, next_attempt_at) "
                    "VALUES (:consumer, :id, CAST(:envelope AS jsonb), :queue, now() - interval '1 minute', now())"
                ),
                {"consumer": key, "id": ident, "envelope": envelope, "queue": "q"},
            )
    store = bus.inbox_store()
    # Listing reads it as an event it cannot show, not as an error.
    assert [(e.event_id, e.event_type) for e in await bus.unrouted_events().peek(10)] == [(unrouted, "unparseable")]
    wanted = _event()
    async with consumers_running(bus, subscriptions=[subscription]):
        await bus.event_bus().publish(wanted)
        await _eventually(lambda: _has_effect(bus, wanted.id), "the event after the unreadable row")
    dead = await store.dead_letters(10)
    assert sorted((d.event_id, d.envelope, d.last_error) for d in dead) == sorted(
        (ident, None, UNREADABLE_ENVELOPE) for ident in (unreadable, deep)
    )
    operations = bus.dead_letter_operations()
    assert [letter.event_type for letter in await operations.peek(10)] == ["unparseable", "unparseable"]
    # A replay would only dead-letter it again: it is left for a discard, and named as not replayed.
    assert await operations.replay([unreadable], 10) == []
    assert [d.error_count for d in await store.dead_letters(10)] == [1, 1]
    for ident in (unreadable, deep):
        assert await store.discard_dead(consumer, ident)
    assert await store.dead_letters(10) == []
    await store.delete_waiting(UNROUTED, unrouted)
