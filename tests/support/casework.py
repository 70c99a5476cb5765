"""A memory world for the case/contact/attachment use cases: database, object store, one clock."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from craig.adapters.memory.attachments import ATTACHMENTS
from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.memory.object_store import MemoryObjectStore
from craig.adapters.memory.outbox import TABLE as OUTBOX
from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.sealed_fields import ATTACHMENT_FILE_NAME, ATTACHMENT_TYPE, unseal, unseal_optional
from craig.domain.access import Principal, Role
from craig.domain.attachments import Attachment, UploadValidation
from craig.domain.cases import Case
from craig.domain.contacts import Contact
from craig.ports.object_store import ObjectStore
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.attachments import UploadAttachment
from craig.usecases.cases import OpenCase, RecordContact
from tests.support.ciphers import TEST_CIPHER
from tests.support.clock import FakeClock

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def person(role: Role = Role.CASEWORKER, name: str = "Ann") -> Principal:
    return Principal(uuid.uuid4(), name, role)


@attrs.define
class World:
    clock: FakeClock
    db: MemoryDatabase
    store: MemoryObjectStore

    @classmethod
    def new(cls) -> World:
        clock = FakeClock(T0)
        return cls(clock, MemoryDatabase(clock=clock), MemoryObjectStore(clock=clock))

    def uow(self) -> MemoryUnitOfWork:
        return MemoryUnitOfWork(self.db, TEST_CIPHER)

    def upload(self, store: ObjectStore | None = None, uow: UnitOfWork | None = None, **kw: Any) -> UploadAttachment:
        return UploadAttachment(uow or self.uow(), self.uow, store or self.store, self.clock, UploadValidation(**kw))

    async def case(self, owner: Principal) -> Case:
        return await OpenCase(self.uow(), self.clock)(owner, title="Doe family", family_name="Doe", opened_at=None)

    async def contact(self, owner: Principal, case: Case) -> Contact:
        return await RecordContact(self.uow(), self.clock)(
            owner, case.id, contact_type="home_visit", occurred_at=T0 - timedelta(hours=1), summary="All well."
        )

    async def events(self, type_prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        async with self.db.transaction() as tx:
            rows = sorted(tx.rows(OUTBOX), key=lambda row: row.seq)
        return [(r.envelope.type, dict(r.envelope.payload)) for r in rows if r.envelope.type.startswith(type_prefix)]

    async def attachment_rows(self) -> list[Attachment]:
        """Every stored attachment, whatever its contact or status, decrypted."""
        async with self.db.transaction() as tx:
            rows = list(tx.rows(ATTACHMENTS))
        return [
            Attachment(
                **{
                    **attrs.asdict(row, recurse=False),
                    "file_name": unseal(TEST_CIPHER, ATTACHMENT_FILE_NAME, row.id, row.file_name),
                    "attachment_type": unseal_optional(TEST_CIPHER, ATTACHMENT_TYPE, row.id, row.attachment_type),
                }
            )
            for row in rows
        ]
