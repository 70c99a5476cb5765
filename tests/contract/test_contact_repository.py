"""Contract of ContactRepository on every adapter, and no plaintext summary in any table."""

from __future__ import annotations

import base64
import os
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import text

from craig.adapters.memory.uow import MemoryUnitOfWork
from craig.adapters.postgres.uow import PostgresUnitOfWork
from craig.adapters.sealed_fields import CONTACT_SUMMARY
from craig.domain.cases import Case, new_case
from craig.domain.contacts import Contact, new_contact
from craig.domain.pages import PageRequest
from craig.ports.cipher import FieldCipher, FieldContext
from craig.ports.errors import ConstraintViolation, UndecryptableData
from craig.ports.unit_of_work import UnitOfWork
from tests.support.backends import Backend

pytestmark = pytest.mark.contract

T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)
SECRET = "The child disclosed bruising on the left arm"


class AesGcmTestCipher(FieldCipher):
    """Real AES-256-GCM (a random 96-bit nonce per value), local to this test: the production
    adapter is another feature's."""

    def __init__(self) -> None:
        self._aead = AESGCM(AESGCM.generate_key(bit_length=256))

    @staticmethod
    def _cell(context: FieldContext) -> bytes:
        return f"{context.table}\x00{context.column}\x00{context.row_id}".encode()

    def encrypt_bytes(self, plaintext: bytes, context: FieldContext) -> bytes:
        nonce = os.urandom(12)
        return base64.b64encode(nonce + self._aead.encrypt(nonce, plaintext, self._cell(context)))

    def decrypt_bytes(self, stored: bytes, context: FieldContext) -> bytes:
        raw = base64.b64decode(stored)
        try:
            return self._aead.decrypt(raw[:12], raw[12:], self._cell(context))
        except Exception as error:
            raise UndecryptableData("cannot decrypt") from error

    def encrypt(self, plaintext: str, context: FieldContext) -> str:
        return self.encrypt_bytes(plaintext.encode(), context).decode()

    def decrypt(self, stored: str, context: FieldContext) -> str:
        return self.decrypt_bytes(stored.encode(), context).decode()


async def a_case(uow: UnitOfWork) -> Case:
    case = new_case(id=uuid.uuid4(), title="Doe", family_name=None, opened_at=T0, created_by=uuid.uuid4(), now=T0)
    async with uow:
        await uow.cases.add(case)
        await uow.commit()
    return case


def contact_on(case: Case, hours_ago: int, summary: str = "Visited the family.") -> Contact:
    return new_contact(
        id=uuid.uuid4(),
        case_id=case.id,
        contact_type="home_visit",
        occurred_at=T0 - timedelta(hours=hours_ago),
        summary=summary,
        created_by=case.created_by,
        worker_name="Ann Example",
        now=T0,
    )


async def test_add_get_list(backend: Backend) -> None:
    uow = backend.uow()
    case, other = await a_case(uow), await a_case(uow)
    contacts = [contact_on(case, hours) for hours in (5, 1, 3)]
    async with uow:
        for contact in contacts:
            await uow.contacts.add(contact)
        await uow.contacts.add(contact_on(other, 2))
        await uow.commit()
    async with uow:
        assert await uow.contacts.get(case.id, contacts[0].id) == contacts[0]
        assert await uow.contacts.get(other.id, contacts[0].id) is None
        assert await uow.contacts.get(case.id, uuid.uuid4()) is None
        first = await uow.contacts.list_for_case(case.id, PageRequest(page=1, per_page=2))
        second = await uow.contacts.list_for_case(case.id, PageRequest(page=2, per_page=2))
        assert first.total == second.total == 3
        assert [c.id for c in [*first.items, *second.items]] == [contacts[1].id, contacts[2].id, contacts[0].id]


async def test_a_contact_needs_an_existing_case(backend: Backend) -> None:
    uow = backend.uow()
    orphan = contact_on(
        new_case(id=uuid.uuid4(), title="x", family_name=None, opened_at=T0, created_by=uuid.uuid4(), now=T0), 1
    )
    with pytest.raises(ConstraintViolation):
        async with uow:
            await uow.contacts.add(orphan)


async def test_the_summary_is_stored_encrypted(backend: Backend) -> None:
    cipher = AesGcmTestCipher()
    if backend.memory is not None:
        uow: UnitOfWork = MemoryUnitOfWork(backend.memory, cipher=cipher)
    else:
        assert backend.postgres is not None
        uow = PostgresUnitOfWork(backend.postgres, cipher=cipher)
    case = await a_case(uow)
    contact = contact_on(case, 1, summary=SECRET)
    async with uow:
        await uow.contacts.add(contact)
        await uow.commit()

    if backend.memory is not None:
        async with backend.memory.transaction() as tx:
            stored = [row.summary for row in tx.rows("contacts")]
    else:
        assert backend.postgres is not None
        async with backend.postgres.transaction() as conn:
            stored = list((await conn.execute(text("SELECT summary FROM contacts"))).scalars())
    assert len(stored) == 1
    assert SECRET not in stored[0] and "bruising" not in stored[0]
    assert cipher.decrypt(stored[0], CONTACT_SUMMARY.context(contact.id)) == SECRET
    async with uow:
        assert (await uow.contacts.get(case.id, contact.id)) == contact
