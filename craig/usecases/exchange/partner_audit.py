"""What the partner use cases record in the audit trail: the registration of a partner, and
every read of a partner's records (third-party data that may name a child or a family)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final
from uuid import UUID

from craig.domain.access import Principal
from craig.domain.audit import AuditAction
from craig.domain.partner_records import PartnerRecord
from craig.usecases.audit.record import AuditWork, record

#: The resource type of a partner's entries.
PARTNER: Final = "partner"
#: The resource type of a read of a partner's records (``resource_ids``: the records' ids).
PARTNER_RECORDS: Final = "partner_records"


async def record_records_read(
    uow: AuditWork, principal: Principal, partner_id: UUID, records: Sequence[PartnerRecord]
) -> None:
    """The read, in a transaction of its own, after the partner answered and before the records
    are served: records whose read cannot be recorded are not served."""
    async with uow:
        ids = [item.id for item in records]
        await record(uow, principal, AuditAction.READ, PARTNER_RECORDS, partner_id, resource_ids=ids)
        await uow.commit()
