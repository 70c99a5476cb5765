"""Use cases: foster homes and placements, with the row-locked placement update.

One placement change is one transaction, in one order: lock the placement
(``SELECT … FOR UPDATE``), then the homes it touches (ascending id), validate through the pure
decision, update the placement, adjust occupancy, stage the events, commit. A deadlock or
serialization failure reruns the whole transaction (:mod:`craig.usecases.transient_retry`).

A placement belongs to a case: a principal who cannot see the case gets 404 for the placement,
never 403, so its existence does not leak. The caller's commit may be held by the HTTP
idempotency layer; these use cases never know.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from uuid import UUID

import structlog

from craig.domain.access import Principal, Role
from craig.domain.cases import can_see
from craig.domain.errors import NotFound
from craig.domain.pages import Page, PageRequest
from craig.domain.placement_changes import (
    CaseAlreadyPlaced,
    NewPlacement,
    PlacementDecision,
    PlacementEvent,
    PlacementPatch,
    decide_change,
    decide_new_placement,
    foster_home_created,
    homes_to_lock,
)
from craig.domain.placements import (
    FosterHome,
    Placement,
    PlacementStatus,
    UnknownFosterHome,
    UnknownPlacement,
    new_foster_home,
)
from craig.domain.versions import IfMatch, check_if_match
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.errors import ConstraintViolation, TransientConflict
from craig.ports.outbox import HasOutbox
from craig.ports.placements import ONE_ACTIVE_PLACEMENT_PER_CASE, HasFosterHomes, HasPlacements
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.case_lifecycle.guards import visible_open_case
from craig.usecases.events import new_event, stage_events
from craig.usecases.ids import new_id
from craig.usecases.transient_retry import RetryPolicy, retry_transient

log = structlog.get_logger(__name__)

EVENT_SOURCE = "craig-placements"


class _WriteWork(HasFosterHomes, HasOutbox, HasPlacements, Protocol):
    """What :func:`_write` uses."""


class CreateFosterHomeWork(UnitOfWork, HasFosterHomes, HasOutbox, Protocol):
    """The unit of work :class:`CreateFosterHome` uses."""


class GetFosterHomeWork(UnitOfWork, HasFosterHomes, Protocol):
    """The unit of work :class:`GetFosterHome` uses."""


class ListFosterHomesWork(UnitOfWork, HasFosterHomes, Protocol):
    """The unit of work :class:`ListFosterHomes` uses."""


class CreatePlacementWork(UnitOfWork, HasCases, HasFosterHomes, HasOutbox, HasPlacements, Protocol):
    """The unit of work :class:`CreatePlacement` uses."""


class GetPlacementWork(UnitOfWork, HasCases, HasPlacements, Protocol):
    """The unit of work :class:`GetPlacement` uses."""


class UpdatePlacementWork(UnitOfWork, HasCases, HasFosterHomes, HasOutbox, HasPlacements, Protocol):
    """The unit of work :class:`UpdatePlacement` uses."""


async def _stage(uow: HasOutbox, events: tuple[PlacementEvent, ...], now: datetime) -> None:
    envelopes = [
        new_event(
            source=EVENT_SOURCE,
            type=event.type,
            aggregate_type=event.aggregate_type,
            aggregate_id=event.aggregate_id,
            payload=event.payload,
            now=now,
        )
        for event in events
    ]
    await stage_events(uow, envelopes)


async def _write(uow: _WriteWork, decision: PlacementDecision, *, new: bool, now: datetime) -> None:
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
    await _stage(uow, decision.events, now)


def _log_retry(failures: int, error: TransientConflict) -> None:
    log.info("placement transaction retried", failed_attempts=failures, error=str(error))


class CreateFosterHome:
    """Register a home (supervisors and admins; 403 otherwise). Stages ``foster_home_created``."""

    def __init__(self, uow: CreateFosterHomeWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, *, name: str, capacity: int) -> FosterHome:
        principal.require(Role.SUPERVISOR, Role.ADMIN)
        now = self.clock.now()
        home = new_foster_home(id=new_id(), name=name, capacity=capacity, created_by=principal.sub, now=now)
        async with self.uow:
            await self.uow.foster_homes.add(home)
            await _stage(self.uow, (foster_home_created(home),), now)
            await self.uow.commit()
        return home


class GetFosterHome:
    """One home, or :class:`NotFound` (404). Every authenticated principal may read homes."""

    def __init__(self, uow: GetFosterHomeWork) -> None:
        self.uow = uow

    async def __call__(self, home_id: UUID) -> FosterHome:
        async with self.uow:
            home = await self.uow.foster_homes.get(home_id)
        if home is None:
            raise UnknownFosterHome(home_id)
        return home


class ListFosterHomes:
    """Homes by name, one page with the exact total."""

    def __init__(self, uow: ListFosterHomesWork) -> None:
        self.uow = uow

    async def __call__(self, page: PageRequest) -> Page[FosterHome]:
        async with self.uow:
            return await self.uow.foster_homes.list_by_name(page)


async def _visible_case(uow: HasCases, principal: Principal, case_id: UUID, missing: NotFound) -> None:
    case = await uow.cases.get(case_id)
    if case is None or not can_see(case, principal):
        raise missing


class CreatePlacement:
    """Place a child of a visible case, planned or at once active.

    Active: the home is locked and must have room (409 ``foster-home-at-capacity``); the case
    must have no other active placement (409 ``case-already-placed``). There is no placement row
    to lock yet, and nobody else can see the new one before commit, so the home lock is the
    first lock taken. A planned placement takes no place and locks nothing. Stages
    ``placement_created`` (and ``placement_activated``)."""

    def __init__(self, uow: CreatePlacementWork, clock: Clock, retry: RetryPolicy | None = None) -> None:
        self.uow = uow
        self.clock = clock
        self.retry = retry or RetryPolicy()

    async def __call__(self, principal: Principal, command: NewPlacement) -> Placement:
        return await retry_transient(lambda: self._attempt(principal, command), self.retry, on_retry=_log_retry)

    async def _attempt(self, principal: Principal, command: NewPlacement) -> Placement:
        async with self.uow:
            # The case first, held FOR SHARE until commit: a concurrent closure waits for this
            # placement and then sees it (409 case-has-active-placement), or closed first (409 case-closed).
            await visible_open_case(self.uow, principal, command.case_id)
            home = None
            if command.foster_home_id is not None:
                homes = self.uow.foster_homes
                takes_a_place = command.status is PlacementStatus.ACTIVE
                home = await (homes.get_foster_home_for_update if takes_a_place else homes.get)(command.foster_home_id)
                if home is None:
                    raise UnknownFosterHome(command.foster_home_id)
            now = self.clock.now()
            decision = decide_new_placement(command, id=new_id(), created_by=principal.sub, home=home, now=now)
            await _write(self.uow, decision, new=True, now=now)
            await self.uow.commit()
        return decision.placement


class GetPlacement:
    """One placement of a case the principal can see, else :class:`NotFound` (404)."""

    def __init__(self, uow: GetPlacementWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, placement_id: UUID) -> Placement:
        missing = UnknownPlacement(placement_id)
        async with self.uow:
            placement = await self.uow.placements.get(placement_id)
            if placement is None:
                raise missing
            await _visible_case(self.uow, principal, placement.case_id, missing)
        return placement


class UpdatePlacement:
    """Change status (activate, end with a reason, cancel) and/or move to another home.
    ``if_match``, when given, must name the placement's current version (412 otherwise).
    Activating or moving needs the case open (409 ``case-closed``).

    404 for an unknown or invisible placement or an unknown home; 409 for a transition the table
    refuses (naming ``from`` and ``to``), a full home, a second active placement of the case, or
    a closed placement. A patch that changes nothing answers the placement unchanged."""

    def __init__(self, uow: UpdatePlacementWork, clock: Clock, retry: RetryPolicy | None = None) -> None:
        self.uow = uow
        self.clock = clock
        self.retry = retry or RetryPolicy()

    async def __call__(
        self, principal: Principal, placement_id: UUID, patch: PlacementPatch, if_match: IfMatch | None = None
    ) -> Placement:
        return await retry_transient(
            lambda: self._attempt(principal, placement_id, patch, if_match), self.retry, on_retry=_log_retry
        )

    async def _attempt(
        self, principal: Principal, placement_id: UUID, patch: PlacementPatch, if_match: IfMatch | None
    ) -> Placement:
        missing = UnknownPlacement(placement_id)
        async with self.uow:
            current = await self.uow.placements.get_placement_for_update(placement_id)
            if current is None:
                raise missing
            await _visible_case(self.uow, principal, current.case_id, missing)
            check_if_match(if_match, "placement", current.version)
            if patch.status is PlacementStatus.ACTIVE or patch.foster_home_id is not None:
                # Lock order: the placement, its case (FOR SHARE, against a closure), its homes.
                await visible_open_case(self.uow, principal, current.case_id)
            wanted = homes_to_lock(current, patch)
            homes = await self.uow.foster_homes.get_foster_homes_for_update(wanted)
            for home_id in wanted:
                if home_id not in homes:
                    raise UnknownFosterHome(home_id)
            now = self.clock.now()
            decision = decide_change(current, patch, homes, now)
            if decision.changed:
                await _write(self.uow, decision, new=False, now=now)
            await self.uow.commit()
        return decision.placement
