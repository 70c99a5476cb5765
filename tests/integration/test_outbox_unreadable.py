"""An outbox row whose stored envelope this version cannot read (written by another version, or
edited by hand) on real PostgreSQL. Before, the relay read every claimed row's envelope at once:
the one that failed raised out of every pass, the same oldest row came first in every claim, and
every relay stopped for every aggregate while ``craig status`` counted nothing failing (its
``attempts`` stayed 0). It now fails like a publish: it backs off, shows in ``craig outbox
failing`` with why, and holds up only the younger events of its own aggregate."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from craig.domain.events import UNREADABLE_ENVELOPE
from craig.usecases.events import OutboxRelay
from tests.contract.test_outbox_store import Rounds, event, stage
from tests.support.backends import postgres_backend

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


#: How a row comes to be unreadable, and a word its last error then holds.
EDITS = {
    "a key missing": ("UPDATE event_outbox SET envelope = envelope - 'occurred_at' WHERE id = :id", "occurred_at"),
    # The pool's JSON codec refuses these before any envelope is built.
    "a huge integer": (
        "UPDATE event_outbox SET envelope = jsonb_set(envelope, '{payload}', "
        "jsonb_build_object('n', CAST(repeat('9', 5000) AS numeric))) WHERE id = :id",
        "digits",
    ),
    "nested too deep": (
        "UPDATE event_outbox SET envelope = jsonb_set(envelope, '{payload}', "
        "jsonb_build_object('n', CAST(repeat('[', 3000) || repeat(']', 3000) AS jsonb))) WHERE id = :id",
        "RecursionError",
    ),
    "another aggregate": (
        "UPDATE event_outbox SET envelope = jsonb_set(envelope, '{aggregate_id}', '\"elsewhere\"') WHERE id = :id",
        "names the aggregate",
    ),
}


@pytest.mark.parametrize("edit", list(EDITS))
async def test_an_unreadable_row_fails_alone_and_shows_as_failing(pg_url: str, edit: str) -> None:
    async with postgres_backend(pg_url) as backend:
        bad, behind_bad = event("bad", 1), event("bad", 2)
        others = [event(f"good-{n}") for n in range(5)]
        await stage(backend, bad, behind_bad, *others)
        assert backend.postgres is not None
        async with backend.postgres.transaction() as conn:
            await conn.execute(text(EDITS[edit][0]), {"id": bad.id})

        publisher = Rounds(lambda _envelope: False)  # confirms every event
        report = await OutboxRelay(backend.outbox, publisher, batch_size=100).drain_once()
        published = [e for call in publisher.calls for e in call]

        assert sorted(e.aggregate_id for e in published) == sorted(e.aggregate_id for e in others)
        assert (report.claimed, report.published, report.failed) == (6, 5, 1)  # the one behind waits
        uow = backend.uow()
        async with uow:
            (failing,) = await uow.outbox.failing(10)
        assert failing.id == bad.id and failing.attempts == 1 and failing.waiting_behind == 1
        assert failing.last_error is not None and failing.last_error.startswith(UNREADABLE_ENVELOPE)
        assert EDITS[edit][1] in failing.last_error, failing.last_error
        stats = await backend.outbox.stats()
        assert (stats.pending, stats.failing) == (2, 1)

        again = await OutboxRelay(backend.outbox, publisher, batch_size=100).drain_once()
        assert again.claimed == 0 and sum(map(len, publisher.calls)) == 5  # it backs off; the one behind it waits
