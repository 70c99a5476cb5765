"""Operators' view of dead letters: list them, replay them with a fresh retry budget, or
discard the ones that can never succeed.

A replay is an operator's action and is audited: one ``dlx_replay`` entry (the role
``operator``, the operating-system user's name, the event ids asked for, or ``all``) is written
in a transaction of its own BEFORE anything is replayed. Replaying touches the broker, which no
database transaction can include, so the entry records the attempt: it stays visible even when
the replay then fails halfway, and a replay whose entry cannot be written does not start. (An
entry names at most ``AUDIT_MAX_RESOURCE_IDS`` ids: the first ones, in id order.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol
from uuid import UUID

from craig.domain.audit import AuditAction
from craig.domain.constants import AUDIT_MAX_RESOURCE_IDS
from craig.ports.inbox import HasInbox
from craig.ports.messaging import DeadLetterInfo, DeadLetterQueue
from craig.usecases.audit.record import AuditWork, operator_entry, record_alone
from craig.usecases.audit.resource_types import DEAD_LETTER

#: The ``resource_id`` of a replay of every dead letter (``--all``).
EVERY_DEAD_LETTER = "all"


class DeadLetterOperationsWork(AuditWork, HasInbox, Protocol):
    """The unit of work :class:`DeadLetterOperations` uses."""


class DeadLetterOperations:
    def __init__(self, dead_letters: DeadLetterQueue, uow_factory: Callable[[], DeadLetterOperationsWork]) -> None:
        self.dead_letters = dead_letters
        self.uow_factory = uow_factory

    async def peek(self, limit: int) -> list[DeadLetterInfo]:
        return await self.dead_letters.peek(limit)

    async def replay(
        self,
        event_ids: Sequence[UUID] | None,
        limit: int,
        progress: Callable[[int, int], None] = lambda _done, _total: None,
    ) -> list[DeadLetterInfo]:
        """Requeue dead letters (all, or those of ``event_ids``) in their original order; each
        inbox row gets a fresh retry budget before its message goes back.

        ``progress(done, total)`` is called before the first letter, after each letter's fresh
        budget (just before its message goes back), and once at the end with the number
        replayed as both figures. ``total`` is what there is to replay as far as is known
        beforehand (the ids given, or the dead letters counted, at most ``limit``); it is never
        below ``done``.

        The ``dlx_replay`` entry is written first, in a transaction of its own (see above)."""
        wanted = sorted(set(event_ids), key=str) if event_ids is not None else None
        entry = operator_entry(
            AuditAction.DLX_REPLAY,
            DEAD_LETTER,
            EVERY_DEAD_LETTER if wanted is None else None,
            resource_ids=(wanted or [])[:AUDIT_MAX_RESOURCE_IDS],
        )
        await record_alone(self.uow_factory(), entry)
        total = min(limit, len(set(event_ids)) if event_ids is not None else await self.dead_letters.count())
        done = 0
        progress(done, total)

        async def fresh_budget(letter: DeadLetterInfo) -> None:
            nonlocal done
            uow = self.uow_factory()
            async with uow:
                await uow.inbox.reset_for_replay(letter.consumer, letter.event_id)
                await uow.commit()
            done += 1
            progress(done, max(total, done))

        replayed = await self.dead_letters.replay(event_ids, limit, fresh_budget)
        progress(len(replayed), len(replayed))
        return replayed

    async def discard(self, event_ids: Sequence[UUID], queue: str | None = None) -> list[DeadLetterInfo]:
        """Remove the dead letters of ``event_ids`` for good: ones an operator gave up on (their
        queue is gone, or no retry can make them succeed). The ``dlx_discard`` entry (the ids
        asked for) is written first, in a transaction of its own, as a replay's is. An inbox row
        of such an event keeps its dead-letter mark on RabbitMQ; on the in-process bus the row
        is the letter, and goes. ``queue`` narrows the ids to that queue's letters: an id several
        letters share is removed only once it names one of them."""
        wanted = sorted(set(event_ids), key=str)
        entry = operator_entry(AuditAction.DLX_DISCARD, DEAD_LETTER, None, resource_ids=wanted[:AUDIT_MAX_RESOURCE_IDS])
        await record_alone(self.uow_factory(), entry)
        return await self.dead_letters.discard(wanted, queue)
