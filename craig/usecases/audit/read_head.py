"""The chain's head: the hash an auditor keeps elsewhere to check the chain against later."""

from __future__ import annotations

from craig.domain.audit_chain import ChainHead
from craig.ports.audit import AuditChainStore


class ReadAuditHead:
    def __init__(self, store: AuditChainStore) -> None:
        self.store = store

    async def __call__(self) -> ChainHead | None:
        """The newest sealed link, or None when nothing was sealed yet."""
        return await self.store.head()
