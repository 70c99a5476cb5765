"""Use case: place a child of a visible case in a foster home, planned or at once active.

The caller's commit may be held by the HTTP idempotency layer; this use case never knows.
"""

from __future__ import annotations

from typing import Protocol

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.placement_changes import NewPlacement, decide_new_placement
from craig.domain.placements import Placement, PlacementStatus, UnknownFosterHome
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.placements import HasFosterHomes, HasPlacements
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import PLACEMENT
from craig.usecases.case_lifecycle.guards import visible_open_case
from craig.usecases.ids import new_id
from craig.usecases.placements.writes import log_retry, write_decision
from craig.usecases.transient_retry import TransientRetry, retry_transient


class CreatePlacementWork(AuditWork, HasCases, HasFosterHomes, HasOutbox, HasPlacements, Protocol):
    """The unit of work :class:`CreatePlacement` uses."""


class CreatePlacement:
    """Place a child of a visible case, planned or at once active.

    Active: the home is locked and must have room (409 ``foster-home-at-capacity``); the case
    must have no other active placement (409 ``case-already-placed``). There is no placement row
    to lock yet, and nobody else can see the new one before commit, so the home lock is the
    first lock taken. A planned placement takes no place and locks nothing. Stages
    ``placement_created`` (and ``placement_activated``). Recorded as ``create`` with the case, in
    the same transaction; a 404 (invisible case, unknown home) as ``denied``."""

    def __init__(self, uow: CreatePlacementWork, clock: Clock, retry: TransientRetry | None = None) -> None:
        self.uow = uow
        self.clock = clock
        self.retry = retry or TransientRetry()

    async def __call__(self, principal: Principal, command: NewPlacement) -> Placement:
        async with refusals_recorded(self.uow, principal, AuditAction.CREATE, PLACEMENT, case_id=command.case_id):
            return await retry_transient(lambda: self._attempt(principal, command), self.retry, on_retry=log_retry)

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
            await write_decision(self.uow, decision, new=True, now=now)
            placement = decision.placement
            await record(self.uow, principal, AuditAction.CREATE, PLACEMENT, placement.id, case_id=placement.case_id)
            await self.uow.commit()
        return decision.placement
