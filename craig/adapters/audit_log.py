"""Entries recorded on their own, in a unit of work of their own: the
:class:`~craig.ports.audit.AuditLog` of a database whose transactions cost no round trips (the
memory profile). PostgreSQL writes them with one statement instead
(:class:`craig.adapters.postgres.audit.PostgresAuditLog`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from craig.domain.audit import AuditEntry
from craig.ports.audit import AuditLog, HasAudit
from craig.ports.unit_of_work import UnitOfWork


class AuditLogWork(UnitOfWork, HasAudit, Protocol):
    """The unit of work :class:`UnitOfWorkAuditLog` uses."""


class UnitOfWorkAuditLog(AuditLog):
    def __init__(self, uow_factory: Callable[[], AuditLogWork]) -> None:
        self.uow_factory = uow_factory

    async def append(self, entries: Sequence[AuditEntry]) -> None:
        uow = self.uow_factory()
        async with uow:
            await uow.audit.append(entries)
            await uow.commit()
