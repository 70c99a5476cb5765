"""PostgreSQL adapter of the rule-set repository."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import JSONB

from craig.adapters.postgres.session import PostgresSession
from craig.domain.keyset import Keyset, KeysetPage, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.domain.rule_documents import parse_rules
from craig.domain.rules import RuleSet
from craig.ports.rules import RuleSetRepository, RuleSetSummary

# Serializes writers of one name until their transaction ends, so max(version) + 1 is safe.
_LOCK_NAME = text("SELECT pg_advisory_xact_lock(hashtextextended('craig.rule_sets:' || :name, 0))")
_INSERT = text(
    """
    INSERT INTO rule_sets (name, version, rules, created_by, created_at)
    SELECT :name, coalesce(max(version), 0) + 1, :rules, :created_by, :created_at
      FROM rule_sets WHERE name = :name
    RETURNING version
    """
).bindparams(bindparam("rules", type_=JSONB))
_COLUMNS = "name, version, rules, created_by, created_at"
_LATEST = text(f"SELECT {_COLUMNS} FROM rule_sets WHERE name = :name ORDER BY version DESC LIMIT 1")
_GET = text(f"SELECT {_COLUMNS} FROM rule_sets WHERE name = :name AND version = :version")
_LIST = text(
    """
    SELECT DISTINCT ON (name) name, version, jsonb_array_length(rules) AS rule_count, created_by, created_at
      FROM rule_sets
     ORDER BY name, version DESC
     LIMIT :limit OFFSET :offset
    """
)
_COUNT = text("SELECT count(DISTINCT name) FROM rule_sets")
_LATEST_PAGE = """
    SELECT DISTINCT ON (name) name, version, jsonb_array_length(rules) AS rule_count, created_by, created_at
      FROM rule_sets {after}
     ORDER BY name, version DESC
     LIMIT :limit
"""


def _rule_set(row: Mapping[Any, Any]) -> RuleSet:
    document = row["rules"]
    if isinstance(document, str):
        document = json.loads(document)
    return RuleSet(
        name=row["name"],
        version=row["version"],
        rules=parse_rules(document),
        document=tuple(document),
        created_by=row["created_by"],
        created_at=row["created_at"],
    )


def _summary(row: Mapping[str, Any]) -> RuleSetSummary:
    return RuleSetSummary(
        name=row["name"],
        version=row["version"],
        rule_count=row["rule_count"],
        created_by=row["created_by"],
        created_at=row["created_at"],
    )


class PostgresRuleSetRepository(RuleSetRepository):
    def __init__(self, session: PostgresSession) -> None:
        self.session = session

    async def add_version(
        self, name: str, document: Sequence[Mapping[str, Any]], created_by: UUID, created_at: datetime
    ) -> int:
        conn = await self.session.connection()
        await conn.execute(_LOCK_NAME, {"name": name})
        result = await conn.execute(
            _INSERT,
            {"name": name, "rules": list(document), "created_by": created_by, "created_at": created_at},
        )
        return int(result.scalar_one())

    async def latest(self, name: str) -> RuleSet | None:
        row = (await self.session.execute(_LATEST, {"name": name})).mappings().first()
        return _rule_set(row) if row else None

    async def get(self, name: str, version: int) -> RuleSet | None:
        row = (await self.session.execute(_GET, {"name": name, "version": version})).mappings().first()
        return _rule_set(row) if row else None

    async def latest_page(self, keyset: Keyset) -> KeysetPage[RuleSetSummary]:
        params: dict[str, Any] = {"limit": keyset.limit + 1}
        bound = ""
        if keyset.after is not None:
            bound = "WHERE name > :after_name"
            (params["after_name"],) = keyset.after
        rows = (await self.session.execute(text(_LATEST_PAGE.format(after=bound)), params)).mappings()
        items = [_summary(row) for row in rows]
        return keyset_page(items, keyset, lambda summary: (summary.name,))

    async def list_latest(self, page: PageRequest) -> Page[RuleSetSummary]:
        conn = await self.session.connection()
        total = (await conn.execute(_COUNT)).scalar_one()
        rows = (await conn.execute(_LIST, {"limit": page.per_page, "offset": page.offset})).mappings()
        items = [_summary(row) for row in rows]
        return Page(items=items, page=page.page, per_page=page.per_page, total=total)
