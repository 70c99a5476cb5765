"""``/v1/rule-sets``: triage rule sets, versioned, and their evaluation."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency
from litestar.params import FromPath, FromQuery, JSONBody

from craig.domain.rules import RuleSet
from craig.entrypoints.http.api_contract import SUPERVISORS, answers
from craig.entrypoints.http.dependencies import Me, Paging
from craig.entrypoints.http.pagination import keyset_of, legacy_page, next_page
from craig.entrypoints.http.routes.cases import PAGING_PROBLEMS
from craig.ports.rules import RuleSetSummary
from craig.usecases.listings.list_rule_set_page import ListRuleSetPage
from craig.usecases.rules import CreateRuleSet, EvaluateRuleSet, GetRuleSet, ListRuleSets

TAGS = ["rule sets"]


class NewRuleSetBody(msgspec.Struct, forbid_unknown_fields=True):
    """``rules``: an ordered list of ``{when, then}``; checked by the rule language (422)."""

    name: str
    rules: Any


class EvaluateBody(msgspec.Struct, forbid_unknown_fields=True):
    facts: dict[str, Any]


class RuleSetView(msgspec.Struct):
    name: str
    version: int
    rules: list[dict[str, Any]]
    created_by: UUID
    created_at: datetime


class RuleSetSummaryView(msgspec.Struct):
    name: str
    version: int
    rule_count: int
    created_by: UUID
    created_at: datetime


class RuleSetKeysetPage(msgspec.Struct):
    items: list[RuleSetSummaryView]
    next_cursor: str | None


class RuleSetPage(msgspec.Struct):
    items: list[RuleSetSummaryView]
    page: int
    per_page: int
    total: int


class EvaluationView(msgspec.Struct):
    decision: str | None
    matched_rule: int | None
    version: int


def _view(rule_set: RuleSet) -> RuleSetView:
    return RuleSetView(
        name=rule_set.name,
        version=rule_set.version,
        rules=[dict(rule) for rule in rule_set.document],
        created_by=rule_set.created_by,
        created_at=rule_set.created_at,
    )


@post(
    "/rule-sets",
    status_code=201,
    tags=TAGS,
    summary="Create a rule set, or its next version (supervisor, admin)",
    opt=answers("invalid-rule-set", roles=SUPERVISORS, headers=("Location",)),
)
async def create_rule_set(
    data: JSONBody[NewRuleSetBody], principal: Me, create_rule_set: NamedDependency[CreateRuleSet]
) -> Response[RuleSetView]:
    rule_set = await create_rule_set(principal, data.name, data.rules)
    location = f"/v1/rule-sets/{rule_set.name}?version={rule_set.version}"
    return Response(_view(rule_set), status_code=201, headers={"Location": location})


@get(
    "/rule-sets",
    tags=TAGS,
    summary="Every rule set's latest version, by name",
    opt=answers(*PAGING_PROBLEMS, "invalid-input", optional_headers=("Link",)),
)
async def list_rule_sets(
    request: Request[Any, Any, Any],
    cursors: Paging,
    list_rule_sets: NamedDependency[ListRuleSets],
    list_rule_set_page: NamedDependency[ListRuleSetPage],
    limit: FromQuery[int | None] = None,
    cursor: FromQuery[str | None] = None,
    page: FromQuery[int | None] = None,
    per_page: FromQuery[int | None] = None,
) -> Response[RuleSetPage | RuleSetKeysetPage]:
    """Keyset pages (`limit`, `cursor`); `page`/`per_page` still answer the old offset page."""
    legacy = legacy_page(page, per_page, limit=limit, cursor=cursor)
    if legacy is not None:
        result = await list_rule_sets(legacy)
        items = [_summary(s) for s in result.items]
        return Response(RuleSetPage(items=items, page=result.page, per_page=result.per_page, total=result.total))
    found = await list_rule_set_page(keyset_of(request, cursors, limit, cursor, (str,)))
    next_cursor, headers = next_page(request, cursors, found.next_after)
    return Response(RuleSetKeysetPage([_summary(s) for s in found.items], next_cursor), headers=headers)


def _summary(s: RuleSetSummary) -> RuleSetSummaryView:
    return RuleSetSummaryView(
        name=s.name, version=s.version, rule_count=s.rule_count, created_by=s.created_by, created_at=s.created_at
    )


@get("/rule-sets/{name:str}", tags=TAGS, summary="A rule set: its latest version, or ?version=N")
async def get_rule_set(
    name: FromPath[str], get_rule_set: NamedDependency[GetRuleSet], version: FromQuery[int | None] = None
) -> RuleSetView:
    return _view(await get_rule_set(name, version))


@post(
    "/rule-sets/{name:str}/evaluate",
    status_code=200,
    tags=TAGS,
    summary="Evaluate facts: the first matching rule decides",
)
async def evaluate_rule_set(
    name: FromPath[str], data: JSONBody[EvaluateBody], evaluate_rule_set: NamedDependency[EvaluateRuleSet]
) -> EvaluationView:
    rule_set, evaluation = await evaluate_rule_set(name, data.facts)
    return EvaluationView(decision=evaluation.decision, matched_rule=evaluation.matched_rule, version=rule_set.version)


ROUTES = [create_rule_set, list_rule_sets, get_rule_set, evaluate_rule_set]
