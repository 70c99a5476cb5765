"""Use case: one more rate-limit slot for a claimed job's partner.

A pass reserves one slot per claimed job; the retry after a 401 is a request of its own and
needs a slot of its own, taken here in a short transaction of its own (never one open around
the HTTP call).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Protocol

from craig.domain.partners import Partner
from craig.ports.exchange import HasPartnerRateLimits, PartnerRateLimited
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.exchange.send_policy import SendPolicy


class ReserveSendSlotWork(UnitOfWork, HasPartnerRateLimits, Protocol):
    """The unit of work :class:`ReserveSendSlot` uses."""


class ReserveSendSlot:
    """Reserve one slot of ``partner``'s shared rate limit within ``policy.max_rate_wait`` and
    return how long until it starts. Raises :class:`PartnerRateLimited` (``retry_after``: the
    wait for the next free slot) when there is none that soon: nothing is then taken."""

    def __init__(self, uow_factory: Callable[[], ReserveSendSlotWork], policy: SendPolicy | None = None) -> None:
        self._uow = uow_factory
        self.policy = policy or SendPolicy()

    async def __call__(self, partner: Partner) -> timedelta:
        uow = self._uow()
        async with uow:
            [slot] = await uow.partner_rate_limits.reserve(
                partner.id, partner.effective_rate_limit_rpm, 1, self.policy.max_rate_wait
            )
            await uow.commit()
        if not slot.granted:
            raise PartnerRateLimited(partner.name, slot.wait)
        return slot.wait
