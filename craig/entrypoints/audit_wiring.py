"""The audit trail's providers, a sub-container of the composition root (``container.audit``).

The chain store follows the profile like every other adapter; the readers' use cases, which run
in a request's unit of work, are the root container's (``list_audit_entries``,
``show_case_history``); these stand alone (``container.audit.verify()``).
"""

from __future__ import annotations

from dependency_injector import containers, providers

from craig.adapters.memory.audit_chain import MemoryAuditChainStore
from craig.adapters.memory.database import MemoryDatabase
from craig.adapters.postgres.audit_chain import PostgresAuditChainStore
from craig.adapters.postgres.database import PostgresDatabase
from craig.ports.clock import Clock
from craig.usecases.audit.purge_expired import PurgeExpiredAuditEntries
from craig.usecases.audit.read_head import ReadAuditHead
from craig.usecases.audit.seal_entries import SealAuditEntries
from craig.usecases.audit.verify_chain import VerifyAuditChain


class AuditContainer(containers.DeclarativeContainer):
    profile = providers.Dependency(instance_of=str)
    memory_database: providers.Dependency[MemoryDatabase] = providers.Dependency()
    postgres: providers.Dependency[PostgresDatabase] = providers.Dependency()
    clock: providers.Dependency[Clock] = providers.Dependency()

    postgres_store = providers.Singleton(PostgresAuditChainStore, database=postgres)
    store = providers.Selector(
        profile,
        memory=providers.Singleton(MemoryAuditChainStore, db=memory_database),
        embedded=postgres_store,
        production=postgres_store,
    )
    seal = providers.Factory(SealAuditEntries, store=store)
    verify = providers.Factory(VerifyAuditChain, store=store, clock=clock)
    head = providers.Factory(ReadAuditHead, store=store)
    purge_expired = providers.Factory(PurgeExpiredAuditEntries, store=store)
