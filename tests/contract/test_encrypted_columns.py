"""Every encrypted column, on every adapter: ciphertext at rest bound to its row, moved values
refused, and ``RotateKeys`` upgrading v1 values and legacy plaintext in all of them."""

from __future__ import annotations

import base64
import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import text

from craig.adapters.crypto.aesgcm import NONCE_BYTES, FieldEncryptor, is_encrypted
from craig.adapters.crypto.policy import ModeCipher
from craig.adapters.memory.idempotency import MemoryIdempotencyStore
from craig.adapters.memory.key_rotation import MemoryEncryptedColumnStore
from craig.adapters.postgres.encrypted_columns import ENCRYPTED_COLUMNS, plaintext_columns
from craig.adapters.postgres.idempotency import PostgresIdempotencyStore
from craig.adapters.postgres.key_rotation import PostgresEncryptedColumnStore
from craig.adapters.sealed_fields import CONTACT_SUMMARY, RESPONSE_BODY, SEND_JOB_PAYLOAD, UnreadableJson
from craig.domain.attachments import Attachment, new_attachment
from craig.domain.case_lifecycle import close
from craig.domain.cases import Case, new_case
from craig.domain.contacts import Contact, new_contact
from craig.domain.exchange_transactions import ExchangeTransaction, new_transaction
from craig.domain.idempotency import ClaimRequest, StoredResponse
from craig.domain.intake import Referral, new_child, new_referral, new_reporter
from craig.domain.partners import Partner
from craig.domain.screening import screen_out
from craig.ports.cipher import FieldCipher
from craig.ports.errors import UndecryptableData
from craig.ports.idempotency import Claimed, IdempotencyStore
from craig.ports.key_rotation import EncryptedColumn, EncryptedColumnStore
from craig.usecases.ids import new_id
from craig.usecases.operations import RotateKeys
from tests.support.backends import Backend
from tests.support.exchange_data import a_partner
from tests.support.sealed import new_key, uow_with

pytestmark = pytest.mark.contract

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
MARK = "Quillon-Zebrafinch-4471"


@attrs.frozen
class Written:
    case: Case
    contact: Contact
    attachment: Attachment
    partner: Partner
    transaction: ExchangeTransaction
    referral: Referral
    slot_key: str
    response: StoredResponse


def idempotency_store(backend: Backend, cipher: FieldCipher) -> IdempotencyStore:
    if backend.memory is not None:
        return MemoryIdempotencyStore(backend.memory, cipher)
    assert backend.postgres is not None
    return PostgresIdempotencyStore(backend.postgres, cipher)


def column_store(backend: Backend) -> EncryptedColumnStore:
    if backend.memory is not None:
        return MemoryEncryptedColumnStore(backend.memory)
    assert backend.postgres is not None
    return PostgresEncryptedColumnStore(backend.postgres)


async def write_everything(backend: Backend, cipher: FieldCipher) -> Written:
    """One row of every table that has an encrypted column, each encrypted column holding MARK."""
    owner = uuid.uuid4()
    case, _ = close(
        new_case(
            id=new_id(), title=f"{MARK} title", family_name=f"{MARK} family", opened_at=T0, created_by=owner, now=T0
        ),
        f"{MARK} closed",
        active_placements=0,
        by=owner,
        now=T0,
    )
    contact = new_contact(
        id=new_id(),
        case_id=case.id,
        contact_type="home_visit",
        occurred_at=T0 - timedelta(hours=1),
        summary=f"{MARK} summary",
        created_by=owner,
        worker_name="Ann",
        now=T0,
    )
    draft = new_attachment(
        id=new_id(),
        case_id=case.id,
        contact_id=contact.id,
        attachment_type=f"{MARK} type",
        file_name=f"{MARK}.pdf",
        content_type="application/pdf",
        file_size=3,
        uploaded_by=owner,
        worker_name="Ann",
        now=T0,
    )
    partner = a_partner(client_secret=f"{MARK} secret")
    transaction, jobs = new_transaction(
        id=new_id(),
        partner_ids=[partner.id],
        payload={"note": f"{MARK} payload", "n": 1},
        created_by=owner,
        job_ids=[new_id()],
        correlation_ids=[new_id()],
        now=T0,
    )
    referral = new_referral(
        id=new_id(),
        reporter=new_reporter(f"{MARK} reporter", "+1 555 0100", "mark@example.org"),
        child=new_child(f"{MARK} child", 7),
        concern=f"{MARK} concern",
        location=f"{MARK} location",
        now=T0,
    )
    referral, _ = screen_out(referral, reason=f"{MARK} reason", by=owner, now=T0)
    uow = uow_with(backend, cipher)
    async with uow:
        await uow.cases.add(case)
        await uow.contacts.add(contact)
        attachment = await uow.attachments.add(draft)
        await uow.partners.add(partner)
        await uow.exchange_transactions.add(transaction)
        await uow.send_jobs.add_many(jobs)
        await uow.referrals.add(referral)
        await uow.commit()
    request = ClaimRequest(
        cache_key=uuid.uuid4().hex,
        method="POST",
        path="/v1/cases",
        user_sub=owner,
        fingerprint="f",
        slot_id=uuid.uuid4(),
    )
    claimed = await idempotency_store(backend, cipher).try_claim(request, timedelta(seconds=30))
    assert isinstance(claimed, Claimed)
    response = StoredResponse(201, (("content-type", "application/json"),), json.dumps({"title": MARK}).encode())
    async with uow:
        await uow.idempotency.finalize_succeeded(request.cache_key, claimed.slot.claim_token, response)
        await uow.commit()
    return Written(case, contact, attachment, partner, transaction, referral, request.cache_key, response)


async def read_everything(backend: Backend, cipher: FieldCipher, written: Written) -> dict[str, Any]:
    uow = uow_with(backend, cipher)
    async with uow:
        transaction = await uow.exchange_transactions.get(written.transaction.id)
        jobs = await uow.send_jobs.for_transaction(written.transaction.id)
        found: dict[str, Any] = {
            "case": await uow.cases.get(written.case.id),
            "contact": await uow.contacts.get(written.case.id, written.contact.id),
            "attachment": await uow.attachments.get(written.contact.id, written.attachment.id),
            "partner": await uow.partners.get(written.partner.id),
            "transaction payload": dict(transaction.payload) if transaction else None,
            "job payloads": [dict(job.payload) for job in jobs],
            "referral": await uow.referrals.get(written.referral.id),
        }
    slot, _ = await idempotency_store(backend, cipher).get(written.slot_key)
    found["response"] = slot.response if slot else None
    return found


def expected(written: Written) -> dict[str, Any]:
    payload = dict(written.transaction.payload)
    return {
        "case": written.case,
        "contact": written.contact,
        "attachment": written.attachment,
        "partner": written.partner,
        "transaction payload": payload,
        "job payloads": [payload],
        "referral": written.referral,
        "response": written.response,
    }


async def cells(backend: Backend, column: EncryptedColumn) -> list[tuple[Any, Any]]:
    """(row key, stored value) of every row of the column's table, exactly as stored."""
    if backend.memory is not None:
        async with backend.memory.transaction() as tx:
            return [(getattr(row, column.key), getattr(row, column.column)) for row in tx.rows(column.table)]
    assert backend.postgres is not None
    async with backend.postgres.transaction() as conn:
        query = text(f"SELECT {column.key}, {column.column} FROM {column.table}")
        return [
            (key, bytes(value) if column.binary and value is not None else value)
            for key, value in (await conn.execute(query)).all()
        ]


async def overwrite(backend: Backend, column: EncryptedColumn, key: Any, value: Any) -> None:
    """Write one stored cell behind the repositories' back (raw SQL on PostgreSQL)."""
    if backend.memory is not None:
        async with backend.memory.transaction() as tx:
            tx.put(column.table, key, attrs.evolve(tx.get(column.table, key), **{column.column: value}))
        return
    assert backend.postgres is not None
    async with backend.postgres.transaction() as conn:
        statement = text(f"UPDATE {column.table} SET {column.column} = :value WHERE {column.key} = :key")
        await conn.execute(statement, {"value": value, "key": key})


async def raw_dump(backend: Backend) -> str:
    """Every stored row of every table with an encrypted column, as text."""
    tables = sorted({column.table for column in ENCRYPTED_COLUMNS})
    if backend.memory is not None:
        async with backend.memory.transaction() as tx:
            return repr([list(tx.rows(table)) for table in tables])
    assert backend.postgres is not None
    async with backend.postgres.transaction() as conn:
        return repr([(await conn.execute(text(f"SELECT * FROM {table}"))).all() for table in tables])


def v1_ciphertext(key: str, key_id: str, plaintext: bytes) -> str:
    """A value as the format before v2 wrote it (associated data: version and key id only)."""
    nonce = os.urandom(NONCE_BYTES)
    sealed = AESGCM(base64.b64decode(key)).encrypt(nonce, plaintext, f"craig:v1:{key_id}".encode())
    return f"enc:v1:{key_id}:" + base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")


def as_stored(column: EncryptedColumn, value: str | bytes) -> str | bytes:
    if column.binary:
        return value if isinstance(value, bytes) else value.encode("ascii")
    return value if isinstance(value, str) else value.decode("utf-8")


async def test_every_encrypted_column_holds_ciphertext_of_its_own_row(backend: Backend) -> None:
    cipher = ModeCipher(FieldEncryptor.from_setting(f"k1:{new_key()}"), "required")
    written = await write_everything(backend, cipher)
    assert await read_everything(backend, cipher, written) == expected(written)
    assert MARK not in await raw_dump(backend)
    for column in ENCRYPTED_COLUMNS:
        stored = [value for _, value in await cells(backend, column) if value is not None]
        assert stored, f"{column}: nothing was written to it"
        assert all(is_encrypted(value) and value[:7] in ("enc:v2:", b"enc:v2:") for value in stored), column


async def test_a_value_copied_to_another_row_does_not_decrypt(backend: Backend) -> None:
    cipher = ModeCipher(FieldEncryptor.from_setting(new_key()), "required")
    first, second = await write_everything(backend, cipher), await write_everything(backend, cipher)
    stolen = dict(await cells(backend, CONTACT_SUMMARY))[first.contact.id]
    await overwrite(backend, CONTACT_SUMMARY, second.contact.id, stolen)
    uow = uow_with(backend, cipher)
    async with uow:
        assert (await uow.contacts.get(first.case.id, first.contact.id)) == first.contact
        with pytest.raises(UndecryptableData, match=r"contacts\.summary"):
            await uow.contacts.get(second.case.id, second.contact.id)


async def test_a_job_whose_payload_does_not_decrypt_still_reads_and_refuses_to_be_used(backend: Backend) -> None:
    cipher = ModeCipher(FieldEncryptor.from_setting(new_key()), "required")
    await write_everything(backend, cipher)
    second = await write_everything(backend, cipher)
    payloads = dict(await cells(backend, SEND_JOB_PAYLOAD))
    uow = uow_with(backend, cipher)
    async with uow:
        [target] = await uow.send_jobs.for_transaction(second.transaction.id)
    stolen = next(value for key, value in payloads.items() if key != target.id)
    await overwrite(backend, SEND_JOB_PAYLOAD, target.id, stolen)
    async with uow:
        job = await uow.send_jobs.get(target.id)
        listed = await uow.send_jobs.for_transaction(second.transaction.id)
    assert job is not None and [j.id for j in listed] == [job.id]
    assert attrs.evolve(job, payload={}) == attrs.evolve(target, payload={})  # the other columns read fine
    assert isinstance(job.payload, UnreadableJson)
    with pytest.raises(UndecryptableData):
        json.dumps(dict(job.payload))


async def test_rotation_upgrades_v1_values_and_legacy_plaintext_in_every_column(backend: Backend) -> None:
    old_key = new_key()
    old = FieldEncryptor.from_setting(f"old:{old_key}")
    written = await write_everything(backend, ModeCipher(old, "required"))
    # What the code before v2 left behind: v1 ciphertext in the columns it encrypted, and
    # plaintext in the columns it did not encrypt yet.
    for column in ENCRYPTED_COLUMNS:
        for key, value in await cells(backend, column):
            if value is None:
                continue
            raw = value if isinstance(value, bytes) else value.encode("ascii")
            plaintext = old.decrypt_bytes(raw, column.context(key))
            legacy = plaintext if column.plaintext_history else v1_ciphertext(old_key, "old", plaintext)
            await overwrite(backend, column, key, as_stored(column, legacy))

    fresh_key = new_key()
    ring = FieldEncryptor.from_setting(f"new:{fresh_key},old:{old_key}")
    during = ModeCipher(ring, "required", plaintext_columns())
    assert await read_everything(backend, during, written) == expected(written)
    reports = await RotateKeys(column_store(backend), ring, ENCRYPTED_COLUMNS, batch_size=2)()
    assert {str(r.column): (r.remaining, r.undecryptable) for r in reports} == {
        str(c): (0, 0) for c in ENCRYPTED_COLUMNS
    }
    assert all(r.rewritten >= 1 for r in reports)
    for column in ENCRYPTED_COLUMNS:
        for _, value in await cells(backend, column):
            assert value is None or as_stored(column, value)[:11] in ("enc:v2:new:", b"enc:v2:new:"), column
    # Only the new key, and no plaintext accepted anywhere: everything was encrypted for its row.
    strict = ModeCipher(FieldEncryptor.from_setting(f"new:{fresh_key}"), "required")
    assert await read_everything(backend, strict, written) == expected(written)
    again = await RotateKeys(column_store(backend), ring, ENCRYPTED_COLUMNS, batch_size=2)()
    assert sum(r.rewritten for r in again) == 0


async def test_a_response_stored_without_its_body_stores_nothing_to_encrypt(backend: Backend) -> None:
    cipher = ModeCipher(FieldEncryptor.from_setting(new_key()), "required")
    store = idempotency_store(backend, cipher)
    responses = {
        uuid.uuid4().hex: StoredResponse(201, (), b"", body_too_large=True),
        uuid.uuid4().hex: StoredResponse(204, (), b""),
        uuid.uuid4().hex: StoredResponse(201, (("content-type", "application/json"),), b'{"id":1}'),
    }
    uow = uow_with(backend, cipher)
    for key, response in responses.items():
        request = ClaimRequest(
            cache_key=key, method="POST", path="/v1/x", user_sub=None, fingerprint="f", slot_id=uuid.uuid4()
        )
        claimed = await store.try_claim(request, timedelta(seconds=30))
        assert isinstance(claimed, Claimed)
        async with uow:
            await uow.idempotency.finalize_succeeded(key, claimed.slot.claim_token, response)
            await uow.commit()
    stored = dict(await cells(backend, RESPONSE_BODY))
    assert [stored[key] is None for key in responses] == [True, True, False]
    for key, response in responses.items():
        slot, _ = await store.get(key)
        assert slot is not None and slot.response == response
