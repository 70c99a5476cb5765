"""Referral validation, references, triage facts, and the default intake-triage rules."""

from __future__ import annotations

import importlib.util
import uuid
from datetime import UTC, datetime

import pytest

from craig.adapters.postgres.migrations import MIGRATIONS_DIR
from craig.domain.intake import (
    DEFAULT_TRIAGE_RULES,
    InvalidReferral,
    Referral,
    new_child,
    new_referral,
    new_reporter,
    referral_reference,
    triage_facts,
)
from craig.domain.rule_documents import parse_rules
from craig.domain.rules import evaluate

pytestmark = pytest.mark.unit

NOW = datetime(2026, 3, 4, 10, 0, tzinfo=UTC)
MIGRATION = MIGRATIONS_DIR / "versions" / "0009_intake_rules.py"


def referral(concern: str, age: int | None = 8, location: str | None = None) -> Referral:
    return new_referral(
        id=uuid.uuid4(),
        reporter=new_reporter("Pat Reporter", None, None),
        child=new_child("Sam", age),
        concern=concern,
        location=location,
        now=NOW,
    )


def test_reference_format() -> None:
    ident = uuid.UUID(int=(1 << 40) - 1)
    assert referral_reference(ident, NOW) == "REF-20260304-ZZZZZZZZ"
    assert referral_reference(uuid.UUID(int=0), NOW) == "REF-20260304-00000000"
    reference = referral("x").reference
    assert reference.startswith("REF-20260304-") and len(reference) == 21
    assert not set(reference[13:]) & set("ILOU")


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: new_reporter("  ", None, None), "reporter.name"),
        (lambda: new_reporter("x" * 201, None, None), "reporter.name"),
        (lambda: new_reporter("Pat", "call me", None), "reporter.phone"),
        (lambda: new_reporter("Pat", "+1 (", None), "reporter.phone"),
        (lambda: new_reporter("Pat", None, "pat@"), "reporter.email"),
        (lambda: new_child("", 3), "child.first_name"),
        (lambda: new_child("Sam", -1), "child.age"),
        (lambda: new_child("Sam", 22), "child.age"),
        (lambda: referral("   "), "concern"),
        (lambda: referral("x" * 5001), "concern"),
    ],
)
def test_invalid_forms_name_the_field(build: object, field: str) -> None:
    with pytest.raises(InvalidReferral) as raised:
        build()  # type: ignore[operator]
    assert raised.value.problem_extra == {"field": field}
    assert raised.value.detail.startswith(field)


def test_fields_are_trimmed_and_blank_optionals_dropped() -> None:
    reporter = new_reporter(" Pat ", " +44 20 7946 0958 ", "  ")
    assert (reporter.name, reporter.phone, reporter.email) == ("Pat", "+44 20 7946 0958", None)


def test_triage_facts() -> None:
    facts = triage_facts(referral("He came to school with BRUISES and said he was hungry", age=None, location="Leeds"))
    assert facts["mentions_injury"] and facts["mentions_neglect"]
    assert not facts["mentions_immediate_danger"] and not facts["mentions_sexual_abuse"]
    assert facts["has_location"] and not facts["reporter_contactable"]
    assert "child_age" not in facts


def test_the_migration_seeds_exactly_the_documented_default() -> None:
    spec = importlib.util.spec_from_file_location("migration_0009", MIGRATION)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.DEFAULT_INTAKE_TRIAGE == list(DEFAULT_TRIAGE_RULES)


@pytest.mark.parametrize(
    ("concern", "age", "priority"),
    [
        ("Her father has a knife and is shouting", 12, "urgent"),
        ("The baby has bruises on his arms", 1, "urgent"),
        ("The toddler is left alone all day", 2, "urgent"),
        ("She has a burn mark on her hand", 9, "high"),
        ("An adult is grooming him online", 14, "high"),
        ("The kids look hungry every morning", 10, "medium"),
        ("His mother is drunk most evenings", 10, "medium"),
        ("I am worried about this family", 4, "medium"),
        ("I am worried about this family", 10, "low"),
        ("I am worried about this family", None, "low"),
    ],
)
def test_default_intake_triage(concern: str, age: int | None, priority: str) -> None:
    rules = parse_rules(list(DEFAULT_TRIAGE_RULES))
    assert evaluate(rules, triage_facts(referral(concern, age))).decision == priority
