"""Random details changes, closures, reopenings and additions on a few cases: the pure lifecycle
decisions agree with an independent oracle, and versions grow by one per change, never else.

The machine plays the use cases' part: it holds each case as the repository would, asks the
decision, and keeps what it returns. The oracle is a few lines of its own bookkeeping.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from craig.domain.case_lifecycle import (
    CASE_CLOSED,
    CASE_REOPENED,
    CASE_UPDATED,
    CaseClosed,
    CaseDetails,
    CaseHasActivePlacement,
    InvalidCaseTransition,
    close,
    reopen,
    require_open,
    update_details,
)
from craig.domain.cases import Case, CaseStatus, new_case
from craig.domain.errors import InvalidInput

pytestmark = pytest.mark.unit

CASES = [uuid.UUID(int=n) for n in range(1, 4)]
WORKER = uuid.UUID(int=99)
TITLES = st.sampled_from([None, "Doe family", " Doe family ", "Roe family", "", "   "])
NAMES = st.sampled_from([None, "Doe", "Roe", " Roe "])
REASONS = st.sampled_from(["family moved away", "  ", "", "x" * 2001, "done"])


class CaseLifecycleMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.cases: dict[uuid.UUID, Case] = {
            case_id: new_case(
                id=case_id, title="Initial title", family_name=None, opened_at=self.now, created_by=WORKER, now=self.now
            )
            for case_id in CASES
        }
        #: The oracle's own record: status and the number of changes of each case.
        self.status = {case_id: "open" for case_id in CASES}
        self.changes = {case_id: 0 for case_id in CASES}
        self.active_placements = {case_id: 0 for case_id in CASES}

    def _tick(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now

    @rule(case_id=st.sampled_from(CASES), title=TITLES, family=NAMES, clear=st.booleans())
    def change_details(self, case_id: uuid.UUID, title: str | None, family: str | None, clear: bool) -> None:
        case = self.cases[case_id]
        details = CaseDetails(title=title, family_name=family, clear_family_name=clear)
        try:
            updated, facts = update_details(case, details, by=WORKER, now=self._tick())
        except InvalidInput:
            assert title is not None and not title.strip()
            return
        wanted_title = title.strip() if title is not None else case.title
        wanted_family = None if clear else (family.strip() if family is not None else case.family_name)
        changed = sorted(
            name
            for name, before, after in [
                ("family_name", case.family_name, wanted_family),
                ("title", case.title, wanted_title),
            ]
            if before != after
        )
        assert (updated.title, updated.family_name) == (wanted_title, wanted_family)
        if changed:
            assert [f.type for f in facts] == [CASE_UPDATED] and facts[0].payload["fields"] == changed
            for value in (wanted_title, wanted_family):
                assert value is None or value not in str(facts[0].payload.values())  # names, never values
            self.changes[case_id] += 1
        else:
            assert facts == () and updated == case
        self.cases[case_id] = updated

    @rule(case_id=st.sampled_from(CASES), reason=REASONS)
    def close(self, case_id: uuid.UUID, reason: str) -> None:
        case = self.cases[case_id]
        expected: type[Exception] | None = None
        if not reason.strip() or len(reason.strip()) > 2000:
            expected = InvalidInput
        elif self.status[case_id] == "closed":
            expected = InvalidCaseTransition
        elif self.active_placements[case_id]:
            expected = CaseHasActivePlacement
        try:
            closed, facts = close(
                case, reason, active_placements=self.active_placements[case_id], by=WORKER, now=self._tick()
            )
        except (InvalidInput, InvalidCaseTransition, CaseHasActivePlacement) as error:
            assert type(error) is expected
            return
        assert expected is None
        assert [f.type for f in facts] == [CASE_CLOSED] and closed.close_reason == reason.strip()
        self.status[case_id] = "closed"
        self.changes[case_id] += 1
        self.cases[case_id] = closed

    @rule(case_id=st.sampled_from(CASES), reason=REASONS)
    def reopen(self, case_id: uuid.UUID, reason: str) -> None:
        try:
            reopened, facts = reopen(self.cases[case_id], reason, by=WORKER, now=self._tick())
        except InvalidInput:
            assert not reason.strip() or len(reason.strip()) > 2000
            return
        except InvalidCaseTransition:
            assert self.status[case_id] == "open"
            return
        assert self.status[case_id] == "closed"
        assert [f.type for f in facts] == [CASE_REOPENED] and reopened.closed_at is None
        self.status[case_id] = "open"
        self.changes[case_id] += 1
        self.cases[case_id] = reopened

    @rule(case_id=st.sampled_from(CASES))
    def add_something(self, case_id: uuid.UUID) -> None:
        """A contact, an attachment, a placement or an assignment: only an open case takes one."""
        try:
            require_open(self.cases[case_id])
        except CaseClosed:
            assert self.status[case_id] == "closed"
            return
        assert self.status[case_id] == "open"

    @rule(case_id=st.sampled_from(CASES), active=st.booleans())
    def place_or_end(self, case_id: uuid.UUID, active: bool) -> None:
        if self.status[case_id] == "open" or not active:
            self.active_placements[case_id] = int(active)

    @invariant()
    def cases_agree_with_the_oracle(self) -> None:
        for case_id, case in self.cases.items():
            assert case.status is CaseStatus(self.status[case_id])
            assert case.version == 1 + self.changes[case_id]
            assert (case.closed_at is None) == (case.close_reason is None) == case.is_open
            assert case.updated_at >= case.created_at


TestCaseLifecycle = CaseLifecycleMachine.TestCase
