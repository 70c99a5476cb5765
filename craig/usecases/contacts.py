"""Use cases: record, read and list the contacts of a case.

The summary travels in the domain as plaintext and is encrypted by the repository; events
never carry it (the outbox is not encrypted).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.contacts import Contact, new_contact
from craig.domain.errors import NotFound
from craig.domain.pages import Page, PageRequest
from craig.ports.cases import HasCases, HasContacts
from craig.ports.clock import Clock
from craig.ports.outbox import HasOutbox
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.case_lifecycle.guards import visible_open_case
from craig.usecases.cases import EVENT_SOURCE, visible_case
from craig.usecases.events import new_event, stage_event
from craig.usecases.ids import new_id


class _VisibleContactWork(HasCases, HasContacts, Protocol):
    """What :func:`visible_contact` uses."""


class RecordContactWork(UnitOfWork, HasCases, HasContacts, HasOutbox, Protocol):
    """The unit of work :class:`RecordContact` uses."""


class GetContactWork(UnitOfWork, HasCases, HasContacts, Protocol):
    """The unit of work :class:`GetContact` uses."""


class ListContactsWork(UnitOfWork, HasCases, HasContacts, Protocol):
    """The unit of work :class:`ListContacts` uses."""


async def visible_contact(uow: _VisibleContactWork, principal: Principal, case_id: UUID, contact_id: UUID) -> Contact:
    """The contact of a case the principal may see, inside the caller's block, or ``NotFound``."""
    await visible_case(uow, principal, case_id)
    contact = await uow.contacts.get(case_id, contact_id)
    if contact is None:
        raise NotFound("contact", contact_id)
    return contact


class RecordContact:
    """Record a contact on a visible case and stage ``cases.contact_recorded``."""

    def __init__(self, uow: RecordContactWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(
        self, principal: Principal, case_id: UUID, *, contact_type: str, occurred_at: datetime, summary: str
    ) -> Contact:
        now = self.clock.now()
        contact = new_contact(
            id=new_id(),
            case_id=case_id,
            contact_type=contact_type,
            occurred_at=occurred_at,
            summary=summary,
            created_by=principal.sub,
            worker_name=principal.name,
            now=now,
        )
        async with self.uow:
            await visible_open_case(self.uow, principal, case_id)  # 409 case-closed
            await self.uow.contacts.add(contact)
            await stage_event(
                self.uow,
                new_event(
                    source=EVENT_SOURCE,
                    type="cases.contact_recorded",
                    aggregate_type="case",
                    aggregate_id=case_id,
                    payload={
                        "case_id": str(case_id),
                        "contact_id": str(contact.id),
                        "contact_type": str(contact.contact_type),
                    },
                    now=now,
                ),
            )
            await self.uow.commit()
        return contact


class GetContact:
    def __init__(self, uow: GetContactWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, contact_id: UUID) -> Contact:
        async with self.uow:
            return await visible_contact(self.uow, principal, case_id, contact_id)


class ListContacts:
    """A visible case's contacts, most recent first."""

    def __init__(self, uow: ListContactsWork) -> None:
        self.uow = uow

    async def __call__(self, principal: Principal, case_id: UUID, page: PageRequest) -> Page[Contact]:
        async with self.uow:
            await visible_case(self.uow, principal, case_id)
            return await self.uow.contacts.list_for_case(case_id, page)
