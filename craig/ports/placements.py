"""Ports: foster homes and placements (``uow.foster_homes``, ``uow.placements``).

Every method runs inside the caller's unit of work (``async with uow:``) and never commits; the
caller commits. Errors are :mod:`craig.ports.errors`; the constraint names below are part of
the contract, so a use case can turn a :class:`ConstraintViolation` into a domain conflict.

Lock order, which every writer follows so that two transactions can never wait on each other in
a cycle: the placement first (:meth:`PlacementRepository.get_placement_for_update`), then its
homes (:meth:`FosterHomeRepository.get_foster_homes_for_update`, ascending id).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Final, Protocol
from uuid import UUID

import attrs

from craig.domain.access import Principal
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.pages import Page, PageRequest
from craig.domain.placements import FosterHome, Placement, PlacementStatus

#: The partial unique index: at most one active placement per case.
ONE_ACTIVE_PLACEMENT_PER_CASE: Final = "placements_one_active_per_case"
#: The CHECK that keeps ``0 <= occupancy <= capacity``.
OCCUPANCY_WITHIN_CAPACITY: Final = "foster_homes_occupancy_within_capacity"
PLACEMENT_CASE_FK: Final = "placements_case_id_fkey"
PLACEMENT_FOSTER_HOME_FK: Final = "placements_foster_home_id_fkey"
#: ``ended`` if and only if an end reason and ``ended_at`` are set.
PLACEMENT_ENDED_HAS_REASON: Final = "placements_ended_has_reason"
#: An active placement is always in a home.
PLACEMENT_ACTIVE_HAS_HOME: Final = "placements_active_has_home"


@attrs.frozen
class FosterHomeStats:
    """For ``craig status``: how full the homes are, and whether any count drifted."""

    homes: int
    at_capacity: int
    #: The first homes at capacity, by name (at most the ``sample`` asked for).
    full_homes: Sequence[FosterHome]
    #: Homes whose stored occupancy differs from their number of active placements.
    drifted: Sequence[UUID]


class FosterHomeRepository(Protocol):
    """``uow.foster_homes``."""

    async def add(self, home: FosterHome) -> None:
        """Insert a new home. Raises ``ConstraintViolation`` on a duplicate id or a home that
        breaks a CHECK (capacity >= 1, 0 <= occupancy <= capacity)."""
        ...

    async def get(self, home_id: UUID) -> FosterHome | None:
        """The home as last committed (no lock), or None."""
        ...

    async def get_foster_home_for_update(self, home_id: UUID) -> FosterHome | None:
        """``SELECT … FOR NO KEY UPDATE``: the home, locked until the transaction ends, or None.

        Blocks while another transaction holds the lock, then returns the committed state.
        Lock the placement (if any) *before* calling this."""
        ...

    async def get_foster_homes_for_update(self, home_ids: Collection[UUID]) -> Mapping[UUID, FosterHome]:
        """Lock several homes one by one in ascending id order (the one order every writer uses).
        Missing ids are absent from the result."""
        ...

    async def update(self, home: FosterHome) -> None:
        """Store name, capacity, status and version of a home this transaction locked. Raises
        ``ConstraintViolation(OCCUPANCY_WITHIN_CAPACITY)`` when the capacity is below the
        stored occupancy (nothing changes)."""
        ...

    async def list_page(self, keyset: Keyset) -> KeysetPage[FosterHome]:
        """Homes by name, then id, after ``keyset.after``."""
        ...

    async def adjust_occupancy(self, home_id: UUID, delta: int) -> FosterHome:
        """``occupancy += delta`` in one statement, one version newer; returns the new home. Raises
        ``ConstraintViolation(OCCUPANCY_WITHIN_CAPACITY)`` when the result would leave
        ``0..capacity`` (nothing changes), ``UnknownFosterHome`` (404, a ``LookupError``) for an
        unknown home."""
        ...

    async def list_by_name(self, page: PageRequest) -> Page[FosterHome]:
        """Homes by name (then id), one page, with the exact total."""
        ...

    async def stats(self, sample: int) -> FosterHomeStats: ...


class PlacementRepository(Protocol):
    """``uow.placements``."""

    async def add(self, placement: Placement) -> None:
        """Insert a new placement. Raises ``ConstraintViolation`` named
        ``ONE_ACTIVE_PLACEMENT_PER_CASE`` (the case has another active placement),
        ``PLACEMENT_CASE_FK`` or ``PLACEMENT_FOSTER_HOME_FK`` (unknown case or home)."""
        ...

    async def get(self, placement_id: UUID) -> Placement | None:
        """The placement as last committed (no lock), or None."""
        ...

    async def get_placement_for_update(self, placement_id: UUID) -> Placement | None:
        """``SELECT … FOR UPDATE``: the placement, locked until the transaction ends, or None.

        Blocks while another transaction holds the lock, then returns the committed state, so
        two concurrent changes of one placement run one after the other."""
        ...

    async def update(self, placement: Placement) -> None:
        """Store status, home, end reason, ``ended_at``, ``updated_at`` and version of a placement locked
        by this transaction. Raises ``ConstraintViolation`` like :meth:`add`, and
        ``UnknownPlacement`` (404, a ``LookupError``) when the placement does not exist."""
        ...

    async def count_active_in(self, home_id: UUID) -> int:
        """Active placements in the home: what its occupancy must equal."""
        ...

    async def count_active_for_case(self, case_id: UUID) -> int:
        """Active placements of the case (0 or 1)."""
        ...

    async def list_for_case(self, case_id: UUID, keyset: Keyset) -> KeysetPage[Placement]:
        """The case's placements, newest first (``created_at``, then id, descending)."""
        ...

    async def list_for_home(
        self, home_id: UUID, status: PlacementStatus | None, keyset: Keyset, visible_to: Principal | None = None
    ) -> KeysetPage[Placement]:
        """The home's placements (of one status, if given), newest first; with ``visible_to``,
        only those of the cases that principal may see (:func:`~craig.domain.cases.can_see`), so
        that a page and its cursor never hold a placement of another's case."""
        ...


# --- what a unit of work offers, for the use cases that name it -------------------------


class HasFosterHomes(Protocol):
    """A unit of work with ``foster_homes`` (a :class:`FosterHomeRepository` on its transaction)."""

    @property
    def foster_homes(self) -> FosterHomeRepository: ...


class HasPlacements(Protocol):
    """A unit of work with ``placements`` (a :class:`PlacementRepository` on its transaction)."""

    @property
    def placements(self) -> PlacementRepository: ...
