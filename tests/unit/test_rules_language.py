"""The triage condition language: semantics, validation, and "never raises" properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from craig.domain.rule_documents import InvalidRuleSet, parse_rules, validate_name
from craig.domain.rules import Evaluation, evaluate, holds

pytestmark = pytest.mark.unit


def cmp(fact: str, op: str, value: Any = None, **extra: Any) -> dict[str, Any]:
    node = {"fact": fact, "op": op, **extra}
    if op != "exists" or value is not None:
        node["value"] = value
    return node


def check(condition: dict[str, Any], facts: dict[str, Any]) -> bool:
    (rule,) = parse_rules([{"when": condition, "then": "x"}])
    return holds(rule.when, facts)


@pytest.mark.parametrize(
    ("condition", "facts", "expected"),
    [
        (cmp("age", "eq", 3), {"age": 3}, True),
        (cmp("age", "eq", 3), {"age": 3.0}, True),
        (cmp("age", "eq", 3), {"age": "3"}, False),  # kind mismatch
        (cmp("flag", "eq", True), {"flag": 1}, False),  # booleans are not numbers
        (cmp("age", "eq", 1), {"age": True}, False),
        (cmp("age", "ne", 3), {"age": 4}, True),
        (cmp("age", "ne", 3), {"age": "4"}, False),  # a mismatch is false for ne too
        (cmp("age", "ne", 3), {}, False),  # missing fact
        (cmp("age", "lt", 3), {"age": 2}, True),
        (cmp("age", "le", 3), {"age": 3}, True),
        (cmp("age", "gt", 3), {"age": 3}, False),
        (cmp("age", "ge", 3), {"age": 3}, True),
        (cmp("age", "lt", 3), {"age": None}, False),
        (cmp("name", "lt", "m"), {"name": "ann"}, True),
        (cmp("name", "gt", "m"), {"name": 5}, False),
        (cmp("x", "eq", None), {"x": None}, True),
        (cmp("x", "eq", None), {}, False),
        (cmp("x", "in", [1, 2]), {"x": 2}, True),
        (cmp("x", "in", [1, 2]), {"x": "2"}, False),
        (cmp("x", "not_in", [1, 2]), {"x": 3}, True),
        (cmp("x", "not_in", [1, 2]), {"x": "3"}, False),
        (cmp("x", "not_in", []), {"x": "a"}, True),
        (cmp("x", "in", []), {"x": "a"}, False),
        (cmp("x", "in", [1]), {"x": [1]}, False),  # lists are not scalars
        (cmp("x", "exists"), {"x": None}, True),
        (cmp("x", "exists"), {}, False),
        (cmp("x", "exists", False), {}, True),
        (cmp("child.age", "lt", 3), {"child": {"age": 2}}, True),
        (cmp("child.age", "lt", 3), {"child": 2}, False),
        (cmp("a.b", "eq", 1), {"a.b": 1}, True),  # a top-level key wins over the path
        ({"all": []}, {}, True),
        ({"any": []}, {}, False),
        ({"not": {"any": []}}, {}, True),
        ({"all": [cmp("a", "eq", 1), cmp("b", "eq", 2)]}, {"a": 1, "b": 2}, True),
        ({"all": [cmp("a", "eq", 1), cmp("b", "eq", 2)]}, {"a": 1, "b": 3}, False),
        ({"any": [cmp("a", "eq", 1), cmp("b", "eq", 2)]}, {"a": 0, "b": 2}, True),
        ({"not": cmp("a", "eq", 1)}, {}, True),  # not of a missing fact's comparison
    ],
)
def test_semantics(condition: dict[str, Any], facts: dict[str, Any], expected: bool) -> None:
    assert check(condition, facts) is expected


def test_first_matching_rule_wins_and_no_match_is_null() -> None:
    rules = parse_rules(
        [
            {"when": cmp("age", "lt", 3), "then": "urgent"},
            {"when": cmp("age", "lt", 10), "then": "high"},
            {"when": cmp("age", "lt", 3), "then": "never reached"},
        ]
    )
    assert evaluate(rules, {"age": 2}) == Evaluation("urgent", 0)
    assert evaluate(rules, {"age": 5}) == Evaluation("high", 1)
    assert evaluate(rules, {"age": 50}) == Evaluation(None, None)
    assert evaluate(rules, {}) == Evaluation(None, None)


@pytest.mark.parametrize(
    ("document", "path", "words"),
    [
        ({"when": {}}, "rules", "list"),
        ([{"when": {"all": []}}], "rules[0]", '"when" and "then"'),
        ([{"when": {"all": []}, "then": "x", "extra": 1}], "rules[0]", '"when" and "then"'),
        ([{"when": {"all": []}, "then": ""}], "rules[0].then", "decision"),
        ([{"when": {"all": []}, "then": 7}], "rules[0].then", "decision"),
        ([{"when": {"all": {}}, "then": "x"}], "rules[0].when.all", "list"),
        ([{"when": {"all": [], "any": []}, "then": "x"}], "rules[0].when", "exactly one"),
        ([{"when": {"fact": "a", "op": "contains", "value": 1}, "then": "x"}], "rules[0].when.op", "contains"),
        ([{"when": {"fact": "a", "op": "eq"}, "then": "x"}], "rules[0].when.value", "needs a value"),
        ([{"when": {"fact": "", "op": "eq", "value": 1}, "then": "x"}], "rules[0].when.fact", "fact name"),
        ([{"when": {"fact": "a", "op": "eq", "value": [1]}, "then": "x"}], "rules[0].when.value", "number"),
        ([{"when": {"fact": "a", "op": "lt", "value": True}, "then": "x"}], "rules[0].when.value", "numbers"),
        ([{"when": {"fact": "a", "op": "in", "value": 1}, "then": "x"}], "rules[0].when.value", "list"),
        ([{"when": {"fact": "a", "op": "in", "value": [1, "1"]}, "then": "x"}], "rules[0].when.value", "one kind"),
        ([{"when": {"fact": "a", "op": "exists", "value": 1}, "then": "x"}], "rules[0].when.value", "true/false"),
        ([{"when": {"fact": "a", "op": "eq", "value": 1, "x": 1}, "then": "x"}], "rules[0].when", "keys"),
        ([{"when": {"not": "a"}, "then": "x"}], "rules[0].when.not", "object"),
        ([{"when": {"all": [{"any": ["__import__('os')"]}]}, "then": "x"}], "rules[0].when.all[0].any[0]", "object"),
    ],
)
def test_invalid_documents_say_where_and_why(document: Any, path: str, words: str) -> None:
    with pytest.raises(InvalidRuleSet) as raised:
        parse_rules(document)
    assert raised.value.path == path
    assert words in raised.value.detail
    assert raised.value.problem_extra == {"path": path}


def test_depth_and_size_are_bounded() -> None:
    deep: dict[str, Any] = {"all": []}
    for _ in range(40):
        deep = {"not": deep}
    with pytest.raises(InvalidRuleSet, match="nest at most"):
        parse_rules([{"when": deep, "then": "x"}])
    with pytest.raises(InvalidRuleSet, match="at most 200 rules"):
        parse_rules([{"when": {"all": []}, "then": "x"}] * 201)


@pytest.mark.parametrize("name", ["intake-triage", "a", "x.y_z-1", "0abc"])
def test_valid_names(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize("name", ["", "Intake", "-x", "a b", "a/b", "x" * 101, "name\n", 5, None])
def test_invalid_names(name: Any) -> None:
    with pytest.raises(InvalidRuleSet):
        validate_name(name)


# --- properties ----------------------------------------------------------------------------

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=12,
)
fact_names = st.sampled_from(["a", "b", "c", "a.b", "b.c.d", "missing"])
facts_strategy = st.dictionaries(
    st.sampled_from(["a", "b", "c", "a.b", "x"]) | st.text(max_size=4), json_values, max_size=6
)


#: A document's strings: anything but NUL, which a rule document may not hold (PostgreSQL cannot
#: store it in JSON). Facts are not stored: they may hold one.
document_text = st.text(st.characters(exclude_characters="\x00"), max_size=4)


def _kind_lists() -> st.SearchStrategy[list[Any]]:
    return st.one_of(
        st.lists(st.integers(), max_size=4),
        st.lists(document_text, max_size=4),
        st.lists(st.booleans(), max_size=2),
    )


comparisons = st.one_of(
    st.builds(
        lambda f, op, v: {"fact": f, "op": op, "value": v},
        fact_names,
        st.sampled_from(["eq", "ne"]),
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | document_text,
    ),
    st.builds(
        lambda f, op, v: {"fact": f, "op": op, "value": v},
        fact_names,
        st.sampled_from(["lt", "le", "gt", "ge"]),
        st.integers() | st.floats(allow_nan=False) | document_text,
    ),
    st.builds(
        lambda f, op, v: {"fact": f, "op": op, "value": v}, fact_names, st.sampled_from(["in", "not_in"]), _kind_lists()
    ),
    st.builds(lambda f: {"fact": f, "op": "exists"}, fact_names),
)
conditions = st.recursive(
    comparisons,
    lambda children: st.one_of(
        st.builds(lambda cs: {"all": cs}, st.lists(children, max_size=3)),
        st.builds(lambda cs: {"any": cs}, st.lists(children, max_size=3)),
        st.builds(lambda c: {"not": c}, children),
    ),
    max_leaves=10,
)
documents = st.lists(
    st.builds(lambda w, t: {"when": w, "then": t}, conditions, st.sampled_from(["low", "high", "urgent"])), max_size=5
)


@given(documents, facts_strategy)
def test_any_facts_get_an_answer_and_never_an_error(document: list[dict[str, Any]], facts: dict[str, Any]) -> None:
    rules = parse_rules(document)
    result = evaluate(rules, facts)
    if result.matched_rule is None:
        assert result.decision is None
        assert not any(holds(rule.when, facts) for rule in rules)
    else:
        assert result.decision == rules[result.matched_rule].then
        assert holds(rules[result.matched_rule].when, facts)
        assert not any(holds(rule.when, facts) for rule in rules[: result.matched_rule])


@given(json_values)
def test_validation_accepts_or_explains_anything(document: Any) -> None:
    try:
        parse_rules(document)
    except InvalidRuleSet as error:
        assert error.path.startswith("rules")


def _nested(levels: int) -> dict[str, Any]:
    condition: dict[str, Any] = {"fact": "age", "op": "eq", "value": 1}
    for _ in range(levels - 1):
        condition = {"not": condition}
    return condition


def test_the_documented_limits_are_exact() -> None:
    age = {"fact": "age", "op": "eq", "value": 1}
    parse_rules([{"when": _nested(16), "then": "x"}])
    with pytest.raises(InvalidRuleSet, match="nest at most 16 deep"):
        parse_rules([{"when": _nested(17), "then": "x"}])
    parse_rules([{"when": {"all": [age] * 1999}, "then": "x"}])  # 2000 conditions, the group included
    with pytest.raises(InvalidRuleSet, match="at most 2000 conditions"):
        parse_rules([{"when": {"all": [age] * 2000}, "then": "x"}])
    parse_rules([{"when": {"fact": "age", "op": "in", "value": list(range(1000))}, "then": "x"}])
    with pytest.raises(InvalidRuleSet, match="at most 1000 values"):
        parse_rules([{"when": {"fact": "age", "op": "in", "value": list(range(1001))}, "then": "x"}])
