"""Contract of EncryptedColumnStore on every adapter, driven by the RotateKeys use case."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest

from craig.adapters.crypto.aesgcm import FieldEncryptor
from craig.adapters.crypto.policy import ModeCipher
from craig.adapters.memory.key_rotation import MemoryEncryptedColumnStore
from craig.adapters.postgres.encrypted_columns import ENCRYPTED_COLUMNS
from craig.adapters.postgres.key_rotation import PostgresEncryptedColumnStore
from craig.domain.intake import Referral, new_child, new_referral, new_reporter
from craig.ports.key_rotation import EncryptedColumnStore
from craig.usecases.operations import Progress, RotateKeys
from tests.support.backends import Backend
from tests.support.sealed import new_key, overwrite, raw_rows, uow_with

pytestmark = pytest.mark.contract

NOW = datetime(2026, 5, 1, tzinfo=UTC)
REFERRAL_COLUMNS = [column for column in ENCRYPTED_COLUMNS if column.table == "referrals"]


def store(backend: Backend) -> EncryptedColumnStore:
    if backend.memory is not None:
        return MemoryEncryptedColumnStore(backend.memory)
    assert backend.postgres is not None
    return PostgresEncryptedColumnStore(backend.postgres)


def referral(n: int) -> Referral:
    return new_referral(
        id=uuid.uuid4(),
        reporter=new_reporter(f"Reporter {n}", "+1 555 0100" if n % 2 else None, f"r{n}@example.org"),
        child=new_child(f"Child {n}", n % 18),
        concern=f"concern number {n}",
        location=None if n % 3 else f"Street {n}",
        now=NOW,
    )


async def write(backend: Backend, cipher: ModeCipher, referrals: list[Referral]) -> None:
    uow = uow_with(backend, cipher)
    async with uow:
        for item in referrals:
            await uow.referrals.add(item)
        await uow.commit()


async def read_all(backend: Backend, cipher: ModeCipher, referrals: list[Referral]) -> list[Referral]:
    uow = uow_with(backend, cipher)
    async with uow:
        found = [await uow.referrals.get(item.id) for item in referrals]
        await uow.commit()
    return [item for item in found if item is not None]


async def test_rotation_moves_every_value_to_the_new_key_while_reads_keep_working(backend: Backend) -> None:
    old_key = new_key()
    before = [referral(n) for n in range(7)]
    await write(backend, ModeCipher(FieldEncryptor.from_setting(f"old:{old_key}"), "required"), before)
    fresh_key = new_key()
    ring = FieldEncryptor.from_setting(f"new:{fresh_key},old:{old_key}")
    cipher = ModeCipher(ring, "required")
    after = [referral(n) for n in range(7, 9)]
    await write(backend, cipher, after)  # written by an instance already on the new ring

    reads_during_rotation = 0
    rotating = True

    async def reader() -> None:
        nonlocal reads_during_rotation
        while rotating:
            assert await read_all(backend, cipher, before + after) == before + after
            reads_during_rotation += 1
            await asyncio.sleep(0)

    progress: list[Progress] = []
    reading = asyncio.create_task(reader())
    try:
        reports = await RotateKeys(store(backend), ring, REFERRAL_COLUMNS, batch_size=2)(progress.append)
    finally:
        rotating = False
        await reading
    assert reads_during_rotation > 0

    by_column = {str(r.column): r for r in reports}
    assert by_column["referrals.reporter_name"].rewritten == 7  # the 2 new ones were never touched
    assert by_column["referrals.reporter_phone"].rewritten == sum(1 for r in before if r.reporter.phone)
    assert all(r.remaining == 0 and r.undecryptable == 0 for r in reports)
    name_progress = [p for p in progress if str(p.column) == "referrals.reporter_name"]
    assert [(p.done, p.total) for p in name_progress] == [(0, 7), (2, 7), (4, 7), (6, 7), (7, 7)]

    for row in await raw_rows(backend, "referrals"):
        for column in REFERRAL_COLUMNS:
            value = row[column.column]
            assert value is None or value.startswith("enc:v2:new:")
    new_only = ModeCipher(FieldEncryptor.from_setting(f"new:{fresh_key}"), "required")
    assert await read_all(backend, new_only, before + after) == before + after


async def test_legacy_plaintext_is_encrypted_and_undecryptable_values_are_reported(backend: Backend) -> None:
    plaintext_era = ModeCipher(None, "optional")
    items = [referral(n) for n in range(3)]
    await write(backend, plaintext_era, items)
    await overwrite(backend, "referrals", items[0].id, "concern", "enc:v1:lost:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
    ring = FieldEncryptor.from_setting(f"k2:{new_key()}")
    reports = await RotateKeys(store(backend), ring, REFERRAL_COLUMNS, batch_size=500)()
    concern = next(r for r in reports if r.column.column == "concern")
    assert (concern.rewritten, concern.undecryptable, concern.remaining) == (2, 1, 1)
    name = next(r for r in reports if r.column.column == "reporter_name")
    assert (name.rewritten, name.remaining) == (3, 0)
    rows = {row["id"]: row for row in await raw_rows(backend, "referrals")}
    assert rows[items[1].id]["reporter_name"].startswith("enc:v2:k2:")
    assert "Reporter 1" not in str(rows[items[1].id])
    again = await RotateKeys(store(backend), ring, REFERRAL_COLUMNS, batch_size=500)()
    assert sum(r.rewritten for r in again) == 0
