"""Ports: cases, contacts and contact attachments."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Protocol
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.attachments import Attachment
from craig.domain.case_search import CaseQuery
from craig.domain.cases import Case
from craig.domain.contacts import Contact
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.pages import Page, PageRequest
from craig.ports.object_rows import ObjectRows

#: The partial unique index: at most one case per referral.
ONE_CASE_PER_REFERRAL: Final = "cases_one_per_referral"


class CaseRepository(Protocol):
    """``uow.cases``. Every method runs in the unit of work's transaction.

    ``title`` and ``family_name`` are stored only through ``uow.cipher``, bound to the case's row;
    a value that does not decrypt raises :class:`craig.ports.errors.UndecryptableData`. The family
    name is also stored as its blind index (``uow.cipher.blind_index`` of the normalised name),
    which :meth:`search` compares.

    Lock order: a case before anything of it (its placements' homes come after it).
    """

    async def add(self, case: Case) -> None:
        """Insert; a second case for one referral raises ``ConstraintViolation``
        (:data:`ONE_CASE_PER_REFERRAL`)."""
        ...

    async def get(self, case_id: UUID) -> Case | None:
        """The case with its assigned workers, or None."""
        ...

    async def list_visible(self, principal: Principal, page: PageRequest) -> Page[Case]:
        """Cases the principal may see (``craig.domain.cases.can_see``), newest first."""
        ...

    async def assign(self, case_id: UUID, worker_sub: UUID, assigned_by: UUID, now: datetime) -> bool:
        """Assign a worker; False when already assigned (idempotent). A new assignment makes
        the case one version newer, ``updated_at`` ``now``."""
        ...

    async def unassign(self, case_id: UUID, worker_sub: UUID, now: datetime) -> bool:
        """Remove an assignment; False when the worker was not assigned. Makes the case one
        version newer, ``updated_at`` ``now``, when it removes one."""
        ...

    async def get_for_update(self, case_id: UUID) -> Case | None:
        """``SELECT … FOR NO KEY UPDATE``: the case, locked against every other writer of it and
        against :meth:`get_for_share`, until the transaction ends."""
        ...

    async def get_for_share(self, case_id: UUID) -> Case | None:
        """``SELECT … FOR SHARE``: the case, kept from changing (closing) until the transaction
        ends; other sharers are not blocked. Whoever adds to a case (a contact, a placement)
        reads it so."""
        ...

    async def save(self, case: Case) -> None:
        """Store title, family name, status, closure, ``updated_at`` and version of a case this
        transaction locked (:meth:`get_for_update`)."""
        ...

    async def search(self, principal: Principal, query: CaseQuery, keyset: Keyset) -> KeysetPage[Case]:
        """The visible cases that match ``query``, in its sort order then id, after ``keyset.after``."""
        ...

    async def reindex_family_names(self, after: UUID | None, limit: int) -> tuple[int, UUID | None]:
        """Re-make the blind index under the newest key for up to ``limit`` cases after
        ``after`` (by id) whose index is not; returns how many were scanned and the last id.
        For ``craig keys rotate``."""
        ...

    async def count_stale_family_name_indexes(self) -> int:
        """Cases whose family-name index is not under the newest key."""
        ...


class ContactRepository(Protocol):
    """``uow.contacts``. Every method runs in the unit of work's transaction.

    The summary is sensitive: adapters store it only through ``uow.cipher``, bound to the
    contact's row, and decrypt it on read, so no plaintext summary ever lands in a table. A
    summary that does not decrypt (tampered, copied from another row) raises
    :class:`craig.ports.errors.UndecryptableData`; it is never returned as another row's text.
    """

    async def add(self, contact: Contact) -> None: ...

    async def get(self, case_id: UUID, contact_id: UUID) -> Contact | None:
        """The contact if it belongs to ``case_id``, else None."""
        ...

    async def list_for_case(self, case_id: UUID, page: PageRequest) -> Page[Contact]:
        """The case's contacts, most recent ``occurred_at`` first."""
        ...

    async def page_for_case(self, case_id: UUID, keyset: Keyset) -> KeysetPage[Contact]:
        """The same order, (``occurred_at``, id) descending, after ``keyset.after``."""
        ...


class AttachmentRepository(ObjectRows, Protocol):
    """``uow.attachments``: the ``contact_attachments`` table.

    ``file_name`` and ``attachment_type`` are stored only through ``uow.cipher``, bound to the
    attachment's row. It is also the scanner's view of that table
    (:class:`craig.ports.object_rows.ObjectRows`).
    """

    async def add(self, attachment: Attachment) -> Attachment:
        """Insert the row as given, except ``created_at``, which is the DATABASE clock's now (the
        scanner's grace is measured on it); returns the row as stored."""
        ...

    async def get(self, contact_id: UUID, attachment_id: UUID) -> Attachment | None:
        """The attachment if it belongs to ``contact_id`` (any status), else None."""
        ...

    async def list_for_contact(self, contact_id: UUID, page: PageRequest) -> Page[Attachment]:
        """The contact's attachments (every status), oldest first."""
        ...

    async def page_for_contact(self, contact_id: UUID, keyset: Keyset) -> KeysetPage[Attachment]:
        """The same order, (``created_at``, id) ascending, after ``keyset.after``."""
        ...


# --- what a unit of work offers, for the use cases that name it -------------------------


class HasCases(Protocol):
    """A unit of work with ``cases`` (a :class:`CaseRepository` on its transaction)."""

    @property
    def cases(self) -> CaseRepository: ...


class HasContacts(Protocol):
    """A unit of work with ``contacts`` (a :class:`ContactRepository` on its transaction)."""

    @property
    def contacts(self) -> ContactRepository: ...


class HasAttachments(Protocol):
    """A unit of work with ``attachments`` (a :class:`AttachmentRepository` on its transaction)."""

    @property
    def attachments(self) -> AttachmentRepository: ...
