"""Memory adapter of the rule-set repository."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import attrs

from craig.adapters.memory.database import MemoryTransaction
from craig.adapters.memory.session import MemorySession
from craig.domain.constants import INTAKE_TRIAGE_RULE_SET
from craig.domain.intake import DEFAULT_TRIAGE_RULES
from craig.domain.keyset import Keyset, KeysetPage, after, keyset_page
from craig.domain.pages import Page, PageRequest
from craig.domain.rule_documents import parse_rules
from craig.domain.rules import RuleSet
from craig.ports.rules import RuleSetRepository, RuleSetSummary

RULE_SETS = "rule_sets"
SEEDED = "rule_sets_seeded"
SYSTEM_USER = UUID(int=0)


@attrs.frozen(kw_only=True)
class RuleSetRow:
    name: str
    version: int
    #: JSON text, as JSONB would hold it: nobody can mutate a stored version through a reference.
    rules: str
    created_by: UUID
    created_at: datetime


def as_jsonb_gives_it_back(number: str) -> int | float:
    """A JSON number with a fraction or an exponent, read as PostgreSQL's JSONB gives it back.
    JSONB keeps a number as an exact decimal and writes it out without an exponent, keeping the
    digits after the point that were written: ``1e+23`` comes back as the integer
    100000000000000000000000 and ``1.5e+2`` as 150, while ``150.0`` and ``1e-07`` stay fractions."""
    exact = Decimal(number)
    exponent = exact.as_tuple().exponent
    # + 0.0: JSONB has no negative zero (-0.0 comes back as 0.0).
    return int(exact) if isinstance(exponent, int) and exponent >= 0 else float(number) + 0.0


def rule_set_of(row: RuleSetRow) -> RuleSet:
    document = json.loads(row.rules, parse_float=as_jsonb_gives_it_back)
    return RuleSet(
        name=row.name,
        version=row.version,
        rules=parse_rules(document),
        document=tuple(document),
        created_by=row.created_by,
        created_at=row.created_at,
    )


def seed_defaults(tx: MemoryTransaction) -> None:
    """The memory database's migration 0009: the default ``intake-triage``, once."""
    if tx.get(SEEDED, True) is None:
        tx.put(SEEDED, True, True)
        row = RuleSetRow(
            name=INTAKE_TRIAGE_RULE_SET,
            version=1,
            rules=json.dumps(list(DEFAULT_TRIAGE_RULES)),
            created_by=SYSTEM_USER,
            created_at=tx.db.now(),
        )
        tx.put(RULE_SETS, (row.name, row.version), row)


class MemoryRuleSetRepository(RuleSetRepository):
    def __init__(self, session: MemorySession) -> None:
        self.session = session

    async def _tx(self) -> MemoryTransaction:
        tx = await self.session.tx()
        seed_defaults(tx)
        return tx

    async def _versions(self, name: str) -> list[RuleSetRow]:
        return sorted((await self._tx()).select(RULE_SETS, lambda r: r.name == name), key=lambda r: r.version)

    async def add_version(
        self, name: str, document: Sequence[Mapping[str, Any]], created_by: UUID, created_at: datetime
    ) -> int:
        versions = await self._versions(name)
        version = versions[-1].version + 1 if versions else 1
        row = RuleSetRow(
            name=name, version=version, rules=json.dumps(list(document)), created_by=created_by, created_at=created_at
        )
        (await self._tx()).put(RULE_SETS, (name, version), row)
        return version

    async def latest(self, name: str) -> RuleSet | None:
        versions = await self._versions(name)
        return rule_set_of(versions[-1]) if versions else None

    async def get(self, name: str, version: int) -> RuleSet | None:
        row: RuleSetRow | None = (await self._tx()).get(RULE_SETS, (name, version))
        return rule_set_of(row) if row else None

    async def latest_page(self, keyset: Keyset) -> KeysetPage[RuleSetSummary]:
        latest: dict[str, RuleSetRow] = {}
        for row in (await self._tx()).rows(RULE_SETS):
            if row.name not in latest or row.version > latest[row.name].version:
                latest[row.name] = row
        names = [name for name in sorted(latest) if after((name,), keyset, (False,))][: keyset.limit + 1]
        items = [
            RuleSetSummary(
                name=latest[name].name,
                version=latest[name].version,
                rule_count=len(json.loads(latest[name].rules)),
                created_by=latest[name].created_by,
                created_at=latest[name].created_at,
            )
            for name in names
        ]
        return keyset_page(items, keyset, lambda summary: (summary.name,))

    async def list_latest(self, page: PageRequest) -> Page[RuleSetSummary]:
        latest: dict[str, RuleSetRow] = {}
        for row in (await self._tx()).rows(RULE_SETS):
            if row.name not in latest or row.version > latest[row.name].version:
                latest[row.name] = row
        names = sorted(latest)
        chosen = [latest[name] for name in names[page.offset : page.offset + page.per_page]]
        items = [
            RuleSetSummary(
                name=r.name,
                version=r.version,
                rule_count=len(json.loads(r.rules)),
                created_by=r.created_by,
                created_at=r.created_at,
            )
            for r in chosen
        ]
        return Page(items=items, page=page.page, per_page=page.per_page, total=len(names))
