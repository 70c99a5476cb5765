"""Who may see a case and its contacts, inside the caller's block.

A principal sees the cases they created or are assigned to (supervisors and admins see every
case: :func:`craig.domain.cases.can_see`). Whatever the principal may not see answers as if it
did not exist (404, never 403), so another worker's case does not leak. Every use case that
reads below a case (its contacts, their attachments, its placements) goes through here.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.cases import Case, can_see
from craig.domain.contacts import Contact
from craig.domain.errors import NotFound
from craig.ports.cases import HasCases, HasContacts


class VisibleContactWork(HasCases, HasContacts, Protocol):
    """What :func:`visible_contact` uses."""


async def visible_case(uow: HasCases, principal: Principal, case_id: UUID) -> Case:
    """The case, inside the caller's block; :class:`NotFound` when it does not exist or the
    principal may not see it (404, never 403: another worker's case must not leak)."""
    case = await uow.cases.get(case_id)
    if case is None or not can_see(case, principal):
        raise NotFound("case", case_id)
    return case


async def visible_contact(uow: VisibleContactWork, principal: Principal, case_id: UUID, contact_id: UUID) -> Contact:
    """The contact of a case the principal may see, inside the caller's block, or ``NotFound``."""
    await visible_case(uow, principal, case_id)
    contact = await uow.contacts.get(case_id, contact_id)
    if contact is None:
        raise NotFound("contact", contact_id)
    return contact
