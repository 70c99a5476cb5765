"""The write half of a placement change, shared by :class:`CreatePlacement` and
:class:`UpdatePlacement` (and the staging of placement events, shared with
:class:`CreateFosterHome`).

One placement change is one transaction, in one order: lock the placement
(``SELECT … FOR UPDATE``), then the homes it touches (ascending id), validate through the pure
decision, update the placement, adjust occupancy, stage the events, commit. The use cases do
the locking and deciding; :func:`write_decision` does the rest. A deadlock or serialization
failure reruns the whole transaction (:mod:`craig.usecases.transient_retry`), and each rerun
is logged by :func:`log_retry`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

import structlog

from craig.domain.placement_changes import CaseAlreadyPlaced, PlacementDecision, PlacementEvent
from craig.ports.errors import ConstraintViolation, TransientConflict
from craig.ports.outbox import HasOutbox
from craig.ports.placements import ONE_ACTIVE_PLACEMENT_PER_CASE, HasFosterHomes, HasPlacements
from craig.usecases.events.staging import new_event, stage_events

log = structlog.get_logger(__name__)


class WriteDecisionWork(HasFosterHomes, HasOutbox, HasPlacements, Protocol):
    """What :func:`write_decision` uses."""


async def stage_placement_events(uow: HasOutbox, events: tuple[PlacementEvent, ...], now: datetime) -> None:
    envelopes = [
        new_event(
            event.type,
            aggregate_id=event.aggregate_id,
            payload=event.payload,
            now=now,
        )
        for event in events
    ]
    await stage_events(uow, envelopes)


async def write_decision(uow: WriteDecisionWork, decision: PlacementDecision, *, new: bool, now: datetime) -> None:
    """Steps 3-5 of that order: the placement, then occupancy, then the events."""
    placement = decision.placement
    try:
        if new:
            await uow.placements.add(placement)
        else:
            await uow.placements.update(placement)
    except ConstraintViolation as error:
        if error.constraint == ONE_ACTIVE_PLACEMENT_PER_CASE:
            raise CaseAlreadyPlaced(placement.case_id) from error
        raise
    for home_id, delta in sorted(decision.occupancy_deltas.items()):
        await uow.foster_homes.adjust_occupancy(home_id, delta)
    await stage_placement_events(uow, decision.events, now)


def log_retry(failures: int, error: TransientConflict) -> None:
    log.info("placement transaction retried", failed_attempts=failures, error=str(error))
