"""Ports: triage rule sets (versioned, immutable once written)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

import attrs

from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.pages import Page, PageRequest
from craig.domain.rules import RuleSet


@attrs.frozen(kw_only=True)
class RuleSetSummary:
    """The latest version of one rule set, for listings."""

    name: str
    version: int
    rule_count: int
    created_by: UUID
    created_at: datetime


class RuleSetRepository(Protocol):
    """``uow.rule_sets``. Every method runs in the unit of work's transaction; the caller commits.

    A version, once written, never changes: a new document is a new version.
    """

    async def add_version(
        self, name: str, document: Sequence[Mapping[str, Any]], created_by: UUID, created_at: datetime
    ) -> int:
        """Store ``document`` as the next version of ``name`` (1 for a new name) and return it.

        Two concurrent writers of one name are serialized (the second waits for the first's
        transaction), so versions are dense and never collide. The document must already be
        valid (:func:`craig.domain.rules.parse_rules`).
        """
        ...

    async def latest(self, name: str) -> RuleSet | None:
        """The highest version of ``name``, or None."""
        ...

    async def get(self, name: str, version: int) -> RuleSet | None: ...

    async def latest_page(self, keyset: Keyset) -> KeysetPage[RuleSetSummary]:
        """The latest version of every rule set by name, after ``keyset.after`` (a name)."""
        ...

    async def list_latest(self, page: PageRequest) -> Page[RuleSetSummary]:
        """One summary per name (its latest version), ordered by name."""
        ...


# --- what a unit of work offers, for the use cases that name it -------------------------


class HasRuleSets(Protocol):
    """A unit of work with ``rule_sets`` (a :class:`RuleSetRepository` on its transaction)."""

    @property
    def rule_sets(self) -> RuleSetRepository: ...
