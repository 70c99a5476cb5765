"""Public intake referrals: what a member of the public reports, validated, referenced, triaged.

The referral's personal details (reporter, child, concern, location) are sensitive; the
repositories store them through the field cipher. The facts a triage rule set sees are derived
here, so rules never need the raw text.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from craig.domain.constants import (
    CHILD_FIRST_NAME_MAX_LENGTH,
    CHILD_MAX_AGE_YEARS,
    REFERRAL_CONCERN_MAX_LENGTH,
    REFERRAL_LOCATION_MAX_LENGTH,
    REPORTER_EMAIL_MAX_LENGTH,
    REPORTER_NAME_MAX_LENGTH,
    REPORTER_PHONE_MAX_LENGTH,
    REPORTER_PHONE_MIN_DIGITS,
)
from craig.domain.errors import InvalidInput
from craig.domain.rules import Evaluation

_PHONE = re.compile(rf"^\+?[0-9 ().\-/]{{{REPORTER_PHONE_MIN_DIGITS},{REPORTER_PHONE_MAX_LENGTH}}}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

#: Words in the concern that the default triage rules look at, one fact per signal. They are a
#: screening aid for the people who triage, not a diagnosis.
CONCERN_SIGNALS: dict[str, tuple[str, ...]] = {
    "mentions_immediate_danger": (
        "weapon", "gun", "knife", "unconscious", "not breathing", "immediate danger",
        "right now", "locked in", "threatening to kill", "suicid",
    ),
    "mentions_injury": (
        "injur", "bruis", "burn", "fracture", "broken bone", "bleeding", "beaten", "beating",
        "wound", "hit him", "hit her", "hits him", "hits her", "slapped", "kicked",
    ),
    "mentions_sexual_abuse": ("sexual", "molest", "rape", "inappropriate touch", "grooming"),
    "mentions_neglect": (
        "neglect", "hungry", "no food", "unsupervised", "left alone", "home alone", "abandon",
        "not in school", "filthy", "no heating",
    ),
    "mentions_substance_use": ("drunk", "drugs", "overdose", "alcohol", "high on"),
}  # fmt: skip
_SIGNAL_PATTERNS = {
    fact: re.compile(r"\b(?:" + "|".join(re.escape(word) for word in words) + ")", re.IGNORECASE)
    for fact, words in CONCERN_SIGNALS.items()
}


def _is(fact: str) -> dict[str, Any]:
    return {"fact": fact, "op": "eq", "value": True}


#: Version 1 of the ``intake-triage`` rule set, as migration 0009 seeds it (and the memory
#: database on first use). Supervisors replace it with ``POST /v1/rule-sets``.
DEFAULT_TRIAGE_RULES: tuple[dict[str, Any], ...] = (
    {"when": _is("mentions_immediate_danger"), "then": "urgent"},
    {
        "when": {
            "all": [
                {"fact": "child_age", "op": "lt", "value": 3},
                {"any": [_is("mentions_injury"), _is("mentions_neglect")]},
            ]
        },
        "then": "urgent",
    },
    {"when": {"any": [_is("mentions_sexual_abuse"), _is("mentions_injury")]}, "then": "high"},
    {
        "when": {
            "any": [
                _is("mentions_neglect"),
                _is("mentions_substance_use"),
                {"fact": "child_age", "op": "lt", "value": 6},
            ]
        },
        "then": "medium",
    },
    {"when": {"all": []}, "then": "low"},
)


class InvalidReferral(InvalidInput):
    code = "invalid-referral"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}", field=field)
        self.problem_extra = {"field": field}


@attrs.frozen
class Reporter:
    name: str
    phone: str | None = None
    email: str | None = None


@attrs.frozen
class Child:
    first_name: str
    age: int | None = None


@attrs.frozen(kw_only=True)
class Referral:
    id: UUID
    reference: str
    reporter: Reporter
    child: Child
    concern: str
    location: str | None
    received_at: datetime
    #: The decision of the triage rule set, its version and the matching rule; None when the
    #: rule set was missing or no rule matched (people triage it by hand).
    priority: str | None = None
    triage_version: int | None = None
    matched_rule: int | None = None
    #: Screening (:mod:`craig.domain.screening`): ``new``, ``screened_in`` or ``screened_out``.
    status: str = "new"
    screened_at: datetime | None = None
    screened_by: UUID | None = None
    decision_reason: str | None = None
    case_id: UUID | None = None
    #: Grows by one with every change (its ETag).
    version: int = 1


def _text(value: str | None, field: str, max_length: int, *, required: bool) -> str | None:
    cleaned = value.strip() if value is not None else ""
    if not cleaned:
        if required:
            raise InvalidReferral(field, "must not be empty")
        return None
    if len(cleaned) > max_length:
        raise InvalidReferral(field, f"must be at most {max_length} characters")
    return cleaned


def new_reporter(name: str, phone: str | None, email: str | None) -> Reporter:
    checked_name = _text(name, "reporter.name", REPORTER_NAME_MAX_LENGTH, required=True)
    checked_phone = _text(phone, "reporter.phone", REPORTER_PHONE_MAX_LENGTH, required=False)
    if checked_phone is not None and (
        not _PHONE.fullmatch(checked_phone) or sum(ch.isdigit() for ch in checked_phone) < REPORTER_PHONE_MIN_DIGITS
    ):
        raise InvalidReferral("reporter.phone", "must be a phone number: digits, spaces, + ( ) . - /")
    checked_email = _text(email, "reporter.email", REPORTER_EMAIL_MAX_LENGTH, required=False)
    if checked_email is not None and not _EMAIL.fullmatch(checked_email):
        raise InvalidReferral("reporter.email", "must be an e-mail address such as name@example.org")
    assert checked_name is not None
    return Reporter(checked_name, checked_phone, checked_email)


def new_child(first_name: str, age: int | None) -> Child:
    checked = _text(first_name, "child.first_name", CHILD_FIRST_NAME_MAX_LENGTH, required=True)
    if age is not None and (isinstance(age, bool) or not 0 <= age <= CHILD_MAX_AGE_YEARS):
        raise InvalidReferral("child.age", f"must be a whole number of years from 0 to {CHILD_MAX_AGE_YEARS}")
    assert checked is not None
    return Child(checked, age)


def referral_reference(referral_id: UUID, received_at: datetime) -> str:
    """``REF-YYYYMMDD-XXXXXXXX``: the UTC day, then 40 random bits of the UUIDv7 in Crockford
    base32 (no I, L, O, U), so a reference can be read over the phone."""
    bits = referral_id.int & ((1 << 40) - 1)
    code = "".join(_CROCKFORD[(bits >> shift) & 31] for shift in range(35, -1, -5))
    return f"REF-{received_at.strftime('%Y%m%d')}-{code}"


def new_referral(
    *,
    id: UUID,
    reporter: Reporter,
    child: Child,
    concern: str,
    location: str | None,
    now: datetime,
) -> Referral:
    checked_concern = _text(concern, "concern", REFERRAL_CONCERN_MAX_LENGTH, required=True)
    assert checked_concern is not None
    return Referral(
        id=id,
        reference=referral_reference(id, now),
        reporter=reporter,
        child=child,
        concern=checked_concern,
        location=_text(location, "location", REFERRAL_LOCATION_MAX_LENGTH, required=False),
        received_at=now,
    )


def triage_facts(referral: Referral) -> dict[str, Any]:
    """What the ``intake-triage`` rule set sees. ``child_age`` is absent when not given."""
    facts: dict[str, Any] = {
        "has_location": referral.location is not None,
        "reporter_contactable": referral.reporter.phone is not None or referral.reporter.email is not None,
        "concern_length": len(referral.concern),
    }
    if referral.child.age is not None:
        facts["child_age"] = referral.child.age
    for fact, pattern in _SIGNAL_PATTERNS.items():
        facts[fact] = pattern.search(referral.concern) is not None
    return facts


def triaged(referral: Referral, evaluation: Evaluation, version: int | None) -> Referral:
    return attrs.evolve(
        referral, priority=evaluation.decision, triage_version=version, matched_rule=evaluation.matched_rule
    )
