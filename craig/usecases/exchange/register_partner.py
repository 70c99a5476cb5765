"""Use case: register a partner agency.

A partner is where send jobs go (``base_url`` + ``send_path``) and whose records Craig reads
(``records_path``), authenticated by OAuth2 client credentials at ``token_url``.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from craig.domain.access import Principal, Role
from craig.domain.audit import AuditAction
from craig.domain.partners import Partner, PartnerNameTaken, new_partner
from craig.ports.clock import Clock
from craig.ports.exchange import HasPartners
from craig.usecases.audit.record import AuditWork, record, refusals_recorded
from craig.usecases.audit.resource_types import PARTNER
from craig.usecases.ids import new_id


class RegisterPartnerWork(AuditWork, HasPartners, Protocol):
    """The unit of work :class:`RegisterPartner` uses."""


@attrs.frozen(kw_only=True)
class PartnerRegistration:
    name: str
    base_url: str
    token_url: str
    client_id: str
    client_secret: str = attrs.field(repr=False)
    rate_limit_rpm: int | None = None
    send_path: str | None = None
    records_path: str | None = None


class RegisterPartner:
    """Admins register a partner agency; its ``client_secret`` is stored encrypted.
    409 ``partner-name-taken`` when the name is in use."""

    def __init__(self, uow: RegisterPartnerWork, clock: Clock) -> None:
        self.uow = uow
        self.clock = clock

    async def __call__(self, principal: Principal, command: PartnerRegistration) -> Partner:
        async with refusals_recorded(self.uow, principal, AuditAction.CREATE, PARTNER):
            principal.require(Role.ADMIN)
            partner = new_partner(id=new_id(), now=self.clock.now(), **attrs.asdict(command))
            async with self.uow:
                if not await self.uow.partners.add(partner):
                    raise PartnerNameTaken(partner.name)
                await record(self.uow, principal, AuditAction.CREATE, PARTNER, partner.id)
                await self.uow.commit()
        return partner
