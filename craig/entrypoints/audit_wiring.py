"""The audit trail's own use cases, a sub-container of the composition root (``container.audit``):
sealing, verifying, the head and purging, on the profile's chain store. The readers' use cases,
which run in a request's unit of work, are the root container's (``list_audit_entries``,
``show_case_history``).
"""

from __future__ import annotations

from dependency_injector import containers, providers

from craig.ports.audit import AuditChainStore
from craig.ports.clock import Clock
from craig.usecases.audit.purge_expired import PurgeExpiredAuditEntries
from craig.usecases.audit.read_head import ReadAuditHead
from craig.usecases.audit.seal_entries import SealAuditEntries
from craig.usecases.audit.verify_chain import VerifyAuditChain


class AuditContainer(containers.DeclarativeContainer):
    store: providers.Dependency[AuditChainStore] = providers.Dependency()
    clock: providers.Dependency[Clock] = providers.Dependency()

    seal = providers.Factory(SealAuditEntries, store=store)
    verify = providers.Factory(VerifyAuditChain, store=store, clock=clock)
    head = providers.Factory(ReadAuditHead, store=store)
    purge_expired = providers.Factory(PurgeExpiredAuditEntries, store=store)
