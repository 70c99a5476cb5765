"""Operators' view of dead letters: list them, and replay them with a fresh retry budget."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from craig.ports.messaging import DeadLetterInfo, DeadLetterQueue
from craig.ports.unit_of_work import UnitOfWorkFactory


class DeadLetterOperations:
    def __init__(self, dead_letters: DeadLetterQueue, uow_factory: UnitOfWorkFactory) -> None:
        self.dead_letters = dead_letters
        self.uow_factory = uow_factory

    async def peek(self, limit: int) -> list[DeadLetterInfo]:
        return await self.dead_letters.peek(limit)

    async def replay(self, event_ids: Sequence[UUID] | None, limit: int) -> list[DeadLetterInfo]:
        """Requeue dead letters (all, or those of ``event_ids``) in their original order; each
        inbox row gets a fresh retry budget before its message goes back."""

        async def fresh_budget(letter: DeadLetterInfo) -> None:
            uow = self.uow_factory()
            async with uow:
                await uow.inbox.reset_for_replay(letter.consumer, letter.event_id)
                await uow.commit()

        return await self.dead_letters.replay(event_ids, limit, fresh_budget)
