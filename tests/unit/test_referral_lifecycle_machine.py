"""Random referrals, screenings and clock moves: a referral is screened once and for good, the
second screening names the first, the queue order and the overdue flag agree with an oracle."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from craig.domain.errors import InvalidInput
from craig.domain.intake import Referral, new_child, new_referral, new_reporter
from craig.domain.screening import (
    REFERRAL_SCREENED_IN,
    REFERRAL_SCREENED_OUT,
    ReferralAlreadyScreened,
    ReferralQuery,
    ReferralStatus,
    ResponseTimes,
    is_overdue,
    queue_key,
    respond_by,
    screen_in,
    screen_out,
)

pytestmark = pytest.mark.unit

PRIORITIES = [None, "urgent", "high", "medium", "low", "critical"]
HOURS = {"urgent": 24, "high": 72, "medium": 120, "low": 240}
ORDER = {"urgent": 0, "high": 1, "medium": 2, "low": 3}
SCREENERS = [uuid.UUID(int=n) for n in (7, 8)]
REASONS = st.sampled_from(["no concern", "", "   ", "y" * 2001, "duplicate of an earlier report"])


class ReferralMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = datetime(2026, 5, 1, tzinfo=UTC)
        self.times = ResponseTimes()
        self.referrals: dict[uuid.UUID, Referral] = {}
        #: The oracle: who screened each referral, how, and when.
        self.screened: dict[uuid.UUID, tuple[str, uuid.UUID, datetime]] = {}
        self.ids = 0

    @rule(priority=st.sampled_from(PRIORITIES))
    def receive(self, priority: str | None) -> None:
        self.ids += 1
        referral = new_referral(
            id=uuid.UUID(int=self.ids),
            reporter=new_reporter("R", None, None),
            child=new_child("C", 2),
            concern="worried",
            location=None,
            now=self.now,
        )
        self.referrals[referral.id] = attrs.evolve(referral, priority=priority)

    @rule(hours=st.integers(min_value=0, max_value=300))
    def time_passes(self, hours: int) -> None:
        self.now += timedelta(hours=hours)

    @precondition(lambda self: self.referrals)
    @rule(data=st.data(), screen_in_=st.booleans(), who=st.sampled_from(SCREENERS), reason=REASONS)
    def screen(self, data: st.DataObject, screen_in_: bool, who: uuid.UUID, reason: str) -> None:
        referral = self.referrals[data.draw(st.sampled_from(sorted(self.referrals)))]
        earlier = self.screened.get(referral.id)
        try:
            if screen_in_:
                case_id = uuid.uuid4()
                after, facts = screen_in(referral, case_id=case_id, by=who, now=self.now)
            else:
                after, facts = screen_out(referral, reason=reason, by=who, now=self.now)
        except ReferralAlreadyScreened as error:
            assert earlier is not None
            status, by, at = earlier
            assert error.problem_extra["screened_by"] == str(by)
            assert error.problem_extra["screened_at"] == at.isoformat()
            assert error.problem_extra["status"] == status
            return
        except InvalidInput:
            assert not screen_in_ and (not reason.strip() or len(reason.strip()) > 2000)
            return
        assert earlier is None
        assert after.version == referral.version + 1 and after.screened_by == who and after.screened_at == self.now
        if screen_in_:
            assert after.status == ReferralStatus.SCREENED_IN and after.case_id == case_id
            assert [f.type for f in facts] == [REFERRAL_SCREENED_IN] and facts[0].payload["case_id"] == str(case_id)
        else:
            assert after.status == ReferralStatus.SCREENED_OUT and after.decision_reason == reason.strip()
            assert [f.type for f in facts] == [REFERRAL_SCREENED_OUT] and reason not in str(facts[0].payload)
        self.screened[referral.id] = (after.status, who, self.now)
        self.referrals[referral.id] = after

    @invariant()
    def deadlines_and_order_agree_with_the_oracle(self) -> None:
        waiting = []
        for referral in self.referrals.values():
            hours = HOURS.get(referral.priority or "", 240)
            due = referral.received_at + timedelta(hours=hours)
            assert respond_by(referral, self.times) == due
            assert is_overdue(referral, self.times, self.now) == (referral.id not in self.screened and self.now > due)
            assert ReferralQuery(now=self.now).matches(referral) == (referral.id not in self.screened)
            if referral.id not in self.screened:
                waiting.append(referral)
        by_key = sorted(waiting, key=queue_key)
        oracle = sorted(waiting, key=lambda r: (ORDER.get(r.priority or "", 4), r.received_at, r.id))
        assert [r.id for r in by_key] == [r.id for r in oracle]


TestReferralLifecycle = ReferralMachine.TestCase
