"""Rule documents: validate a JSON rule document and compile it into :mod:`craig.domain.rules`.

Every refusal names the place of the fault (``rules[2].when.all[0].op``) and says what to write
instead. The bounds keep evaluating a stored rule set cheap and validation itself unabusable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from craig.domain.constants import (
    RULE_CONDITION_MAX_DEPTH,
    RULE_DECISION_MAX_LENGTH,
    RULE_FACT_NAME_MAX_LENGTH,
    RULE_SET_MAX_CONDITIONS,
    RULE_SET_MAX_RULES,
    RULE_VALUE_LIST_MAX_LENGTH,
)
from craig.domain.errors import InvalidInput
from craig.domain.rules import AllOf, AnyOf, Compare, Condition, Not, Op, Rule, kind_of

RULE_SET_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")


class InvalidRuleSet(InvalidInput):
    """A rule document that does not follow the language; ``path`` points at the fault."""

    code = "invalid-rule-set"

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}", field=path)
        self.path = path
        self.problem_extra = {"path": path}


def is_rule_set_name(name: Any) -> TypeGuard[str]:
    """Whether a rule set may be called ``name``."""
    return isinstance(name, str) and RULE_SET_NAME.fullmatch(name) is not None


def validate_name(name: Any) -> str:
    if not is_rule_set_name(name):
        raise InvalidRuleSet(
            "name", "a rule set name is 1-100 characters: a-z, 0-9, '.', '_' or '-', starting with a-z or 0-9"
        )
    return name


def parse_rules(document: Any) -> tuple[Rule, ...]:
    """Validate a rule document (parsed JSON) and compile it; raises :class:`InvalidRuleSet`."""
    return _Parser().rules(document)


class _Parser:
    def __init__(self) -> None:
        self.conditions = 0

    def rules(self, document: Any) -> tuple[Rule, ...]:
        if not isinstance(document, list):
            raise InvalidRuleSet("rules", "must be a list of {when, then} rules")
        if len(document) > RULE_SET_MAX_RULES:
            raise InvalidRuleSet("rules", f"at most {RULE_SET_MAX_RULES} rules")
        return tuple(self.rule(item, f"rules[{i}]") for i, item in enumerate(document))

    def rule(self, item: Any, path: str) -> Rule:
        if not isinstance(item, Mapping) or set(item) != {"when", "then"}:
            raise InvalidRuleSet(path, 'a rule is an object with exactly the keys "when" and "then"')
        then = item["then"]
        if not isinstance(then, str) or not 1 <= len(then) <= RULE_DECISION_MAX_LENGTH:
            raise InvalidRuleSet(f"{path}.then", f"the decision is a string of 1-{RULE_DECISION_MAX_LENGTH} characters")
        _no_nul(then, f"{path}.then")
        return Rule(self.condition(item["when"], f"{path}.when", 1), then)

    def condition(self, node: Any, path: str, depth: int) -> Condition:
        if depth > RULE_CONDITION_MAX_DEPTH:
            raise InvalidRuleSet(path, f"conditions nest at most {RULE_CONDITION_MAX_DEPTH} deep")
        self.conditions += 1
        if self.conditions > RULE_SET_MAX_CONDITIONS:
            raise InvalidRuleSet(path, f"a rule set holds at most {RULE_SET_MAX_CONDITIONS} conditions")
        if not isinstance(node, Mapping):
            raise InvalidRuleSet(path, "a condition is an object: {fact, op, value}, {all}, {any} or {not}")
        keys = set(node)
        if keys in ({"all"}, {"any"}):
            (key,) = keys
            children = node[key]
            if not isinstance(children, list):
                raise InvalidRuleSet(f"{path}.{key}", "must be a list of conditions")
            parsed = tuple(self.condition(child, f"{path}.{key}[{i}]", depth + 1) for i, child in enumerate(children))
            return AllOf(parsed) if key == "all" else AnyOf(parsed)
        if keys == {"not"}:
            return Not(self.condition(node["not"], f"{path}.not", depth + 1))
        if "fact" in keys and "op" in keys and keys <= {"fact", "op", "value"}:
            return self.compare(node, path)
        raise InvalidRuleSet(path, "a condition has the keys {fact, op, value}, or exactly one of all, any or not")

    def compare(self, node: Mapping[str, Any], path: str) -> Compare:
        fact = node["fact"]
        if not isinstance(fact, str) or not 1 <= len(fact) <= RULE_FACT_NAME_MAX_LENGTH:
            raise InvalidRuleSet(f"{path}.fact", f"a fact name is a string of 1-{RULE_FACT_NAME_MAX_LENGTH} characters")
        _no_nul(fact, f"{path}.fact")
        try:
            op = Op(node["op"])
        except (ValueError, TypeError):
            allowed = ", ".join(o.value for o in Op)
            raise InvalidRuleSet(f"{path}.op", f"unknown operator {node['op']!r}; use one of {allowed}") from None
        has_value = "value" in node
        value = node.get("value")
        if op is Op.EXISTS:
            if has_value and not isinstance(value, bool):
                raise InvalidRuleSet(f"{path}.value", "exists takes no value, or true/false")
            return Compare(fact, op, value if has_value else True)
        if not has_value:
            raise InvalidRuleSet(f"{path}.value", f"the operator {op.value} needs a value")
        if op in (Op.IN, Op.NOT_IN):
            return Compare(fact, op, self.value_list(value, f"{path}.value", op))
        if kind_of(value) is None:
            raise InvalidRuleSet(f"{path}.value", "a value is a number, a string, true, false or null")
        _no_nul(value, f"{path}.value")
        if op in (Op.LT, Op.LE, Op.GT, Op.GE) and kind_of(value) not in ("number", "string"):
            raise InvalidRuleSet(f"{path}.value", f"{op.value} compares numbers or strings")
        return Compare(fact, op, value)

    @staticmethod
    def value_list(value: Any, path: str, op: Op) -> tuple[Any, ...]:
        if not isinstance(value, list) or len(value) > RULE_VALUE_LIST_MAX_LENGTH:
            raise InvalidRuleSet(path, f"{op.value} needs a list of at most {RULE_VALUE_LIST_MAX_LENGTH} values")
        kinds = {kind_of(item) for item in value}
        if None in kinds or len(kinds) > 1:
            raise InvalidRuleSet(path, f"{op.value} needs values of one kind: numbers, strings, booleans or null")
        for i, item in enumerate(value):
            _no_nul(item, f"{path}[{i}]")
        return tuple(value)


def _no_nul(value: Any, path: str) -> None:
    """A NUL character in a string of the document is refused: PostgreSQL cannot store one in
    JSON, so the memory profile refuses it too, with the same 422."""
    if isinstance(value, str) and "\x00" in value:
        raise InvalidRuleSet(path, "a string must not contain a NUL character (U+0000)")
