"""Contract of the referral queue on every adapter: its order, filters, keyset pages, screening
round trip and the per-priority backlog."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import attrs
import pytest

from craig.domain.cases import new_case
from craig.domain.intake import Referral, new_child, new_referral, new_reporter
from craig.domain.keyset import Keyset
from craig.domain.screening import ReferralQuery, ReferralStatus, ResponseTimes, screen_in, screen_out
from tests.support.backends import Backend
from tests.support.sealed import raw_rows

pytestmark = pytest.mark.contract

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=4)


def a_referral(priority: str | None, hours: int) -> Referral:
    referral = new_referral(
        id=uuid.uuid4(),
        reporter=new_reporter("Reporter", None, None),
        child=new_child("Child", 5),
        concern="worried",
        location=None,
        now=T0 + timedelta(hours=hours),
    )
    return attrs.evolve(referral, priority=priority)


async def add(backend: Backend, *referrals: Referral) -> None:
    uow = backend.uow()
    async with uow:
        for referral in referrals:
            await uow.referrals.add(referral)
        await uow.commit()


async def whole_queue(backend: Backend, query: ReferralQuery, limit: int = 2) -> list[uuid.UUID]:
    seen: list[uuid.UUID] = []
    keyset = Keyset(limit=limit)
    uow = backend.uow()
    while True:
        async with uow:
            page = await uow.referrals.queue(query, keyset)
        seen.extend(r.id for r in page.items)
        if page.next_after is None:
            return seen
        keyset = Keyset(limit=limit, after=page.next_after)


async def test_most_urgent_first_then_oldest_first(backend: Backend) -> None:
    referrals = [
        a_referral("low", 0),
        a_referral(None, 1),
        a_referral("urgent", 2),
        a_referral("medium", 3),
        a_referral("urgent", 1),
        a_referral("high", 5),
        a_referral("made-up decision", 0),
    ]
    await add(backend, *referrals)
    low, none, urgent_late, medium, urgent_early, high, other = referrals
    expected = [urgent_early.id, urgent_late.id, high.id, medium.id, low.id, other.id, none.id]
    assert await whole_queue(backend, ReferralQuery(now=NOW)) == expected
    assert await whole_queue(backend, ReferralQuery(now=NOW, priority_rank=0), limit=1) == expected[:2]
    assert await whole_queue(backend, ReferralQuery(now=NOW, priority_rank=4)) == [other.id, none.id]
    # urgent (24 h) and high (72 h) are past due four days in; medium (5 d) and low (10 d) are not
    assert await whole_queue(backend, ReferralQuery(now=NOW, overdue=True)) == expected[:3]
    assert await whole_queue(backend, ReferralQuery(now=NOW, overdue=False)) == expected[3:]
    shorter = ResponseTimes(medium=timedelta(hours=1))
    assert await whole_queue(backend, ReferralQuery(now=NOW, overdue=True, times=shorter)) == expected[:4]


async def test_screening_round_trips_and_leaves_the_unscreened_queue(backend: Backend) -> None:
    kept_in, kept_out, waiting = a_referral("high", 0), a_referral("low", 1), a_referral("low", 2)
    await add(backend, kept_in, kept_out, waiting)
    screener = uuid.uuid4()
    uow = backend.uow()
    async with uow:
        case_id = uuid.uuid4()
        await uow.cases.add(
            new_case(
                id=case_id,
                title="t",
                family_name=None,
                opened_at=NOW,
                created_by=screener,
                now=NOW,
                referral_id=kept_in.id,
            )
        )
        locked = await uow.referrals.get_for_update(kept_in.id)
        assert locked == kept_in
        screened_in, _ = screen_in(locked, case_id=case_id, by=screener, now=NOW)
        screened_out, _ = screen_out(kept_out, reason="a neighbour dispute, no concern", by=screener, now=NOW)
        await uow.referrals.save_screening(screened_in)
        await uow.referrals.save_screening(screened_out)
        await uow.commit()
    async with uow:
        assert await uow.referrals.get(kept_in.id) == screened_in
        assert await uow.referrals.get(kept_out.id) == screened_out
    assert screened_out.version == 2 and screened_out.decision_reason == "a neighbour dispute, no concern"
    assert await whole_queue(backend, ReferralQuery(now=NOW)) == [waiting.id]
    assert await whole_queue(backend, ReferralQuery(now=NOW, status=ReferralStatus.SCREENED_IN)) == [kept_in.id]
    assert await whole_queue(backend, ReferralQuery(now=NOW, status=ReferralStatus.SCREENED_OUT)) == [kept_out.id]
    raw = " ".join(str(row) for row in await raw_rows(backend, "referrals"))
    assert "neighbour" not in raw


async def test_backlog_counts_unscreened_referrals_per_priority(backend: Backend) -> None:
    referrals = [a_referral("urgent", 0), a_referral("urgent", 90), a_referral("low", 3), a_referral(None, 1)]
    await add(backend, *referrals)
    uow = backend.uow()
    async with uow:
        screened, _ = screen_out(referrals[2], reason="r", by=uuid.uuid4(), now=NOW)
        await uow.referrals.save_screening(screened)
        await uow.commit()
    async with uow:
        backlog = {b.priority: b for b in await uow.referrals.backlog(ResponseTimes(), NOW)}
    assert list(backlog) == ["urgent", "high", "medium", "low", "unscored"]
    assert (backlog["urgent"].count, backlog["urgent"].overdue) == (2, 1)
    assert backlog["urgent"].oldest_received_at == T0
    assert (backlog["low"].count, backlog["low"].oldest_received_at) == (0, None)
    assert (backlog["unscored"].count, backlog["unscored"].overdue) == (1, 0)
