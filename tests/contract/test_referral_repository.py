"""Contract of ReferralRepository on every adapter: round trip, and no plaintext at rest."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from craig.domain.intake import Referral, new_child, new_referral, new_reporter
from craig.ports.errors import ConstraintViolation
from tests.support.backends import Backend
from tests.support.sealed import encryptor, overwrite, raw_rows, uow_with

pytestmark = pytest.mark.contract

NOW = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
PII = ("Margaret Reporterson", "+44 20 7946 0958", "margaret@example.org", "Tobias", "Flat 3, 22 Acacia Road")
CONCERN = "Tobias has come to nursery with unexplained marks on his neck twice this week"


def referral() -> Referral:
    name, phone, email, child, location = PII
    return new_referral(
        id=uuid.uuid4(),
        reporter=new_reporter(name, phone, email),
        child=new_child(child, 4),
        concern=CONCERN,
        location=location,
        now=NOW,
    )


async def test_round_trip_with_nothing_readable_at_rest(backend: Backend) -> None:
    cipher = encryptor()
    stored = referral()
    anonymous = new_referral(
        id=uuid.uuid4(),
        reporter=new_reporter("A", None, None),
        child=new_child("B", None),
        concern="c",
        location=None,
        now=NOW,
    )
    uow = uow_with(backend, cipher)
    async with uow:
        await uow.referrals.add(stored)
        await uow.referrals.add(anonymous)
        await uow.commit()
    async with uow:
        assert await uow.referrals.get(stored.id) == stored
        assert await uow.referrals.get(anonymous.id) == anonymous
        assert await uow.referrals.get(uuid.uuid4()) is None

    rows = {row["id"]: row for row in await raw_rows(backend, "referrals")}
    raw = rows[stored.id]
    everything = " ".join(str(value) for value in raw.values())
    for secret in (*PII, CONCERN, "Tobias", "Margaret", "Acacia", "nursery", '"age"'):
        assert secret not in everything
    for column in ("reporter_name", "reporter_phone", "reporter_email", "child_details", "concern", "location"):
        assert raw[column].startswith(cipher.current_prefix)
    assert rows[anonymous.id]["reporter_phone"] is None and rows[anonymous.id]["location"] is None
    assert raw["reference"] == stored.reference


async def test_a_tampered_column_does_not_decrypt(backend: Backend) -> None:
    cipher = encryptor()
    stored = referral()
    uow = uow_with(backend, cipher)
    async with uow:
        await uow.referrals.add(stored)
        await uow.commit()
    (raw,) = await raw_rows(backend, "referrals")
    value = raw["reporter_name"]
    flipped = value[:-2] + ("A" if value[-2] != "A" else "B") + value[-1]
    await overwrite(backend, "referrals", stored.id, "reporter_name", flipped)
    async with uow:
        with pytest.raises(ValueError):
            await uow.referrals.get(stored.id)


async def test_duplicates_are_refused(backend: Backend) -> None:
    uow = uow_with(backend, encryptor())
    stored = referral()
    async with uow:
        await uow.referrals.add(stored)
        await uow.commit()
    with pytest.raises(ConstraintViolation):
        async with uow:
            await uow.referrals.add(stored)
