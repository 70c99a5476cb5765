"""A dead-letter queue in memory for tests of what replays them, and a letter to put in it."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime

from craig.ports.messaging import DeadLetterInfo, DeadLetterQueue, unambiguous


class FakeDeadLetters(DeadLetterQueue):
    def __init__(self, letters: Sequence[DeadLetterInfo]) -> None:
        self.letters = list(letters)

    async def peek(self, limit: int) -> list[DeadLetterInfo]:
        return self.letters[:limit]

    async def count(self) -> int:
        return len(self.letters)

    async def replay(
        self,
        event_ids: Sequence[uuid.UUID] | None,
        limit: int,
        before_requeue: Callable[[DeadLetterInfo], Awaitable[None]],
    ) -> list[DeadLetterInfo]:
        chosen = [x for x in self.letters if event_ids is None or x.event_id in event_ids][:limit]
        for letter in chosen:
            await before_requeue(letter)
            self.letters.remove(letter)
        return chosen

    async def discard(self, event_ids: Sequence[uuid.UUID], queue: str | None = None) -> list[DeadLetterInfo]:
        gone = unambiguous(self.letters, event_ids, queue)
        for letter in gone:
            self.letters.remove(letter)
        return gone


class BrokenDeadLetters(FakeDeadLetters):
    """A broker that goes away in the middle of a replay, after requeueing the first letter."""

    async def replay(
        self,
        event_ids: Sequence[uuid.UUID] | None,
        limit: int,
        before_requeue: Callable[[DeadLetterInfo], Awaitable[None]],
    ) -> list[DeadLetterInfo]:
        await before_requeue(self.letters[0])
        raise ConnectionError("the broker went away")


def dead_letter() -> DeadLetterInfo:
    return DeadLetterInfo(
        event_id=uuid.uuid4(),
        event_type="cases.case_opened",
        consumer="recorder",
        queue="craig.recorder",
        retry_count=5,
        last_error="attempt 6 failed",
        first_failed_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
    )
