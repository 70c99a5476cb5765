"""Triage rule sets: a small, safe condition language, evaluated without ``eval``.

A rule set is an ordered list of rules ``{"when": condition, "then": decision}``; the first rule
whose condition holds decides. A condition is one of::

    {"fact": NAME, "op": OP, "value": V}   OP: eq ne lt le gt ge in not_in exists
    {"all": [conditions]}                  holds when every condition holds (an empty list holds)
    {"any": [conditions]}                  holds when one condition holds (an empty list does not)
    {"not": condition}

Comparisons are between values of one *kind* (number, string, boolean, null). A missing fact,
or a fact of another kind than the rule's value, makes the comparison false: evaluation never
raises, whatever the facts. Documents are validated and compiled by
:mod:`craig.domain.rule_documents`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs


class Op(enum.StrEnum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    IN = "in"
    NOT_IN = "not_in"
    EXISTS = "exists"


@attrs.frozen
class Compare:
    fact: str
    op: Op
    value: Any = None


@attrs.frozen
class AllOf:
    conditions: tuple[Condition, ...]


@attrs.frozen
class AnyOf:
    conditions: tuple[Condition, ...]


@attrs.frozen
class Not:
    condition: Condition


Condition = Compare | AllOf | AnyOf | Not


@attrs.frozen
class Rule:
    when: Condition
    then: str


@attrs.frozen(kw_only=True)
class RuleSet:
    """One immutable version of a named rule set. ``document`` is the rules as JSON."""

    name: str
    version: int
    rules: tuple[Rule, ...]
    document: tuple[Mapping[str, Any], ...]
    created_by: UUID
    created_at: datetime

    def evaluate(self, facts: Mapping[str, Any]) -> Evaluation:
        return evaluate(self.rules, facts)


@attrs.frozen
class Evaluation:
    """The decision of the first matching rule and its index (from 0); both None when none matched."""

    decision: str | None
    matched_rule: int | None


# --- evaluation --------------------------------------------------------------------------------

_ABSENT: Any = object()


def kind_of(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def lookup(facts: Mapping[str, Any], name: str) -> Any:
    """The fact ``name``: a top-level key, else a dotted path into nested objects; or absent."""
    if name in facts:
        return facts[name]
    current: Any = facts
    for part in name.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return _ABSENT
        current = current[part]
    return current


def _compare(op: Op, fact: Any, value: Any) -> bool:
    kind = kind_of(fact)
    if kind is None:
        return False
    if op in (Op.IN, Op.NOT_IN):
        same = [item for item in value if kind_of(item) == kind]
        if value and not same:
            return False
        found = any(item == fact for item in same)
        return found if op is Op.IN else not found
    if kind_of(value) != kind:
        return False
    if op is Op.EQ:
        return bool(fact == value)
    if op is Op.NE:
        return bool(fact != value)
    if kind not in ("number", "string"):
        return False
    if op is Op.LT:
        return bool(fact < value)
    if op is Op.LE:
        return bool(fact <= value)
    if op is Op.GT:
        return bool(fact > value)
    return bool(fact >= value)


def holds(condition: Condition, facts: Mapping[str, Any]) -> bool:
    if isinstance(condition, Compare):
        fact = lookup(facts, condition.fact)
        if condition.op is Op.EXISTS:
            return (fact is not _ABSENT) == bool(condition.value)
        return fact is not _ABSENT and _compare(condition.op, fact, condition.value)
    if isinstance(condition, AllOf):
        return all(holds(c, facts) for c in condition.conditions)
    if isinstance(condition, AnyOf):
        return any(holds(c, facts) for c in condition.conditions)
    return not holds(condition.condition, facts)


def evaluate(rules: Sequence[Rule], facts: Mapping[str, Any]) -> Evaluation:
    """First match wins; no match gives ``Evaluation(None, None)``. Never raises."""
    for index, rule in enumerate(rules):
        if holds(rule.when, facts):
            return Evaluation(rule.then, index)
    return Evaluation(None, None)
