"""The intake queue: a referral's screening, its priority order and its response time, as pure code.

::

    new --screen in (opens a case)--> screened_in
       \\--screen out (with a reason)--> screened_out

Both outcomes are final. The queue is ordered by priority (urgent, high, medium, low, then
unscored: no rule decided, or a decision outside those four), oldest first within a priority.
A referral must be screened by ``respond_by``: its receipt plus its priority's response time.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from typing import Any, Final
from uuid import UUID

import attrs

from craig.domain import event_catalogue as catalogue
from craig.domain.constants import (
    REFERRAL_RESPONSE_TIME_HIGH,
    REFERRAL_RESPONSE_TIME_LOW,
    REFERRAL_RESPONSE_TIME_MEDIUM,
    REFERRAL_RESPONSE_TIME_URGENT,
    SCREENING_REASON_MAX_LENGTH,
)
from craig.domain.errors import Conflict, InvalidInput
from craig.domain.facts import Fact
from craig.domain.intake import Referral

REFERRAL_SCREENED_IN: Final = catalogue.REFERRAL_SCREENED_IN.name
REFERRAL_SCREENED_OUT: Final = catalogue.REFERRAL_SCREENED_OUT.name
#: The queue's priorities, most urgent first; anything else ranks after them as ``unscored``.
PRIORITIES: Final = ("urgent", "high", "medium", "low")
UNSCORED: Final = "unscored"
UNSCORED_RANK: Final = len(PRIORITIES)


class ReferralStatus(enum.StrEnum):
    NEW = "new"
    SCREENED_IN = "screened_in"
    SCREENED_OUT = "screened_out"


def priority_rank(priority: str | None) -> int:
    """0 for urgent … 3 for low, 4 for unscored."""
    return PRIORITIES.index(priority) if priority in PRIORITIES else UNSCORED_RANK


def rank_name(rank: int) -> str:
    return PRIORITIES[rank] if 0 <= rank < UNSCORED_RANK else UNSCORED


def parse_priority(value: str) -> int:
    """The rank a ``priority`` filter names; :class:`InvalidInput` otherwise."""
    names = (*PRIORITIES, UNSCORED)
    if value not in names:
        raise InvalidInput(f"priority must be one of {', '.join(names)}; got {value!r}")
    return names.index(value)


@attrs.frozen
class ResponseTimes:
    urgent: timedelta = REFERRAL_RESPONSE_TIME_URGENT
    high: timedelta = REFERRAL_RESPONSE_TIME_HIGH
    medium: timedelta = REFERRAL_RESPONSE_TIME_MEDIUM
    low: timedelta = REFERRAL_RESPONSE_TIME_LOW

    def by_rank(self) -> tuple[timedelta, ...]:
        """The response time of each rank, unscored last (as low)."""
        return (self.urgent, self.high, self.medium, self.low, self.low)

    def of(self, priority: str | None) -> timedelta:
        return self.by_rank()[priority_rank(priority)]


def respond_by(referral: Referral, times: ResponseTimes) -> datetime:
    return referral.received_at + times.of(referral.priority)


def is_overdue(referral: Referral, times: ResponseTimes, now: datetime) -> bool:
    """True while the referral waits for screening past its ``respond_by``."""
    return referral.status == ReferralStatus.NEW and now > respond_by(referral, times)


class ReferralAlreadyScreened(Conflict):
    code = "referral-already-screened"

    def __init__(self, referral: Referral) -> None:
        when = referral.screened_at.isoformat() if referral.screened_at else None
        super().__init__(f"referral {referral.reference} was already screened ({referral.status}) at {when}")
        self.problem_extra: dict[str, Any] = {
            "status": str(referral.status),
            "screened_by": str(referral.screened_by),
            "screened_at": when,
            "case_id": str(referral.case_id) if referral.case_id else None,
        }


def checked_screening_reason(reason: str | None, *, required: bool) -> str | None:
    cleaned = (reason or "").strip()
    if not cleaned:
        if required:
            raise InvalidInput("reason must not be empty when screening out")
        return None
    if len(cleaned) > SCREENING_REASON_MAX_LENGTH:
        raise InvalidInput(f"reason must be at most {SCREENING_REASON_MAX_LENGTH} characters")
    return cleaned


def _screened(referral: Referral, status: ReferralStatus, **changes: Any) -> Referral:
    if referral.status != ReferralStatus.NEW:
        raise ReferralAlreadyScreened(referral)
    return attrs.evolve(referral, status=status.value, version=referral.version + 1, **changes)


def _fact(kind: str, referral: Referral, **payload: Any) -> Fact:
    return Fact(
        type=kind,
        aggregate_type="referral",
        aggregate_id=referral.id,
        payload={"referral_id": str(referral.id), "reference": referral.reference, **payload},
    )


def screen_in(
    referral: Referral, *, case_id: UUID, by: UUID, now: datetime, reason: str | None = None
) -> tuple[Referral, tuple[Fact, ...]]:
    """The referral linked to the case opened for it; :class:`ReferralAlreadyScreened` (409)."""
    screened = _screened(
        referral,
        ReferralStatus.SCREENED_IN,
        screened_at=now,
        screened_by=by,
        case_id=case_id,
        decision_reason=checked_screening_reason(reason, required=False),
    )
    return screened, (_fact(REFERRAL_SCREENED_IN, screened, case_id=str(case_id), screened_by=str(by)),)


def screen_out(referral: Referral, *, reason: str, by: UUID, now: datetime) -> tuple[Referral, tuple[Fact, ...]]:
    """The referral closed with ``reason`` (1-2000 characters); :class:`ReferralAlreadyScreened` (409)."""
    cleaned = checked_screening_reason(reason, required=True)
    screened = _screened(
        referral, ReferralStatus.SCREENED_OUT, screened_at=now, screened_by=by, decision_reason=cleaned
    )
    return screened, (_fact(REFERRAL_SCREENED_OUT, screened, screened_by=str(by)),)


@attrs.frozen(kw_only=True)
class ReferralQuery:
    """A queue filter: one status, optionally one priority rank, optionally only (not) overdue."""

    status: ReferralStatus = ReferralStatus.NEW
    priority_rank: int | None = None
    overdue: bool | None = None
    now: datetime
    times: ResponseTimes = ResponseTimes()

    def matches(self, referral: Referral) -> bool:
        if referral.status != self.status:
            return False
        if self.priority_rank is not None and priority_rank(referral.priority) != self.priority_rank:
            return False
        return self.overdue is None or is_overdue(referral, self.times, self.now) == self.overdue


def queue_key(referral: Referral) -> tuple[int, datetime, UUID]:
    """The queue's order: priority rank, then oldest first, then id."""
    return (priority_rank(referral.priority), referral.received_at, referral.id)


@attrs.frozen
class QueueReport:
    """The unscreened referrals per priority, most urgent first, as read at ``now``."""

    now: datetime
    priorities: tuple[QueueBacklog, ...]


@attrs.frozen
class QueueBacklog:
    """Unscreened referrals of one priority: how many, the oldest's receipt, how many overdue."""

    priority: str
    count: int
    oldest_received_at: datetime | None
    overdue: int


@attrs.frozen
class QueueEntry:
    """A referral as the queue shows it: with its deadline and whether it is past it."""

    referral: Referral
    respond_by: datetime
    overdue: bool


def queue_entry(referral: Referral, times: ResponseTimes, now: datetime) -> QueueEntry:
    return QueueEntry(referral, respond_by(referral, times), is_overdue(referral, times, now))
