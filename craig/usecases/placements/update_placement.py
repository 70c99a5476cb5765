"""Use case: change a placement's status and/or move it to another home, row-locked.

One change is one transaction, in one order: lock the placement (``SELECT … FOR UPDATE``), then
the homes it touches (ascending id), validate through the pure decision
(:func:`craig.domain.placement_changes.decide_change`), then write
(:func:`craig.usecases.placements.writes.write_decision`) and commit. A deadlock or
serialization failure reruns the whole transaction (:mod:`craig.usecases.transient_retry`).
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.placement_changes import PlacementPatch, decide_change, homes_to_lock
from craig.domain.placements import Placement, PlacementStatus, UnknownFosterHome, UnknownPlacement
from craig.domain.versions import IfMatch, check_if_match
from craig.ports.cases import HasCases
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.placements import HasFosterHomes, HasPlacements
from craig.usecases.audit.record import AuditWork, changed_field_names, record, refusals_recorded
from craig.usecases.audit.resource_types import PLACEMENT
from craig.usecases.case_lifecycle.guards import visible_open_case
from craig.usecases.placements.visibility import require_visible_case
from craig.usecases.placements.writes import log_retry, write_decision
from craig.usecases.transient_retry import TransientRetry, retry_transient

#: Fields every change moves on its own; an entry names only what the caller changed.
_BOOKKEEPING = ("version", "updated_at")


class UpdatePlacementWork(AuditWork, HasCases, HasFosterHomes, HasOutbox, HasPlacements, Protocol):
    """The unit of work :class:`UpdatePlacement` uses."""


class UpdatePlacement:
    """Change status (activate, end with a reason, cancel) and/or move to another home.

    404 for an unknown or invisible placement or an unknown home; 409 for a transition the table
    refuses (naming ``from`` and ``to``), a full home, a second active placement of the case, or
    a closed placement. A patch that changes nothing answers the placement unchanged.
    ``if_match``, when given, must name the placement's current version (412 otherwise).
    Activating or moving needs the case open (409 ``case-closed``).

    Recorded as ``update`` with the names of the fields that changed (none for a patch that
    changes nothing), in the same transaction; a 404 as ``denied``."""

    def __init__(self, uow: UpdatePlacementWork, clock: Clock, retry: TransientRetry | None = None) -> None:
        self.uow = uow
        self.clock = clock
        self.retry = retry or TransientRetry()

    async def __call__(
        self, principal: Principal, placement_id: UUID, patch: PlacementPatch, if_match: IfMatch | None = None
    ) -> Placement:
        async with refusals_recorded(self.uow, principal, AuditAction.UPDATE, PLACEMENT, placement_id):
            return await retry_transient(
                lambda: self._attempt(principal, placement_id, patch, if_match), self.retry, on_retry=log_retry
            )

    async def _attempt(
        self, principal: Principal, placement_id: UUID, patch: PlacementPatch, if_match: IfMatch | None
    ) -> Placement:
        missing = UnknownPlacement(placement_id)
        async with self.uow:
            current = await self.uow.placements.get_placement_for_update(placement_id)
            if current is None:
                raise missing
            await require_visible_case(self.uow, principal, current.case_id, missing)
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
                await write_decision(self.uow, decision, new=False, now=now)
            changed = changed_field_names(current, decision.placement, ignore=_BOOKKEEPING)
            await record(
                self.uow,
                principal,
                AuditAction.UPDATE,
                PLACEMENT,
                current.id,
                case_id=current.case_id,
                changed_fields=changed,
            )
            await self.uow.commit()
        return decision.placement
