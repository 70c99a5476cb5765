"""Ports: cases, contacts and contact attachments."""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.cases import Case
from craig.domain.pages import Page, PageRequest


class CaseRepository(Protocol):
    """``uow.cases``. Every method runs in the unit of work's transaction."""

    async def add(self, case: Case) -> None: ...

    async def get(self, case_id: UUID) -> Case | None:
        """The case with its assigned workers, or None."""
        ...

    async def list_visible(self, principal: Principal, page: PageRequest) -> Page[Case]:
        """Cases the principal may see (``craig.domain.cases.can_see``), newest first."""
        ...

    async def assign(self, case_id: UUID, worker_sub: UUID, assigned_by: UUID) -> bool:
        """Assign a worker; False when already assigned (idempotent)."""
        ...


class ContactRepository(Protocol):
    """``uow.contacts`` (issue 5)."""


class AttachmentRepository(Protocol):
    """``uow.attachments`` (issue 5)."""
