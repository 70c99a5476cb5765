"""Idempotent writes: claim a slot, replay, wait as a loser, finalize atomically with effects.

The HTTP layer translates; every decision is made here and in :mod:`craig.domain.idempotency`.

1. :meth:`IdempotentRequests.begin` claims the slot, or replays, or reports a body mismatch,
   or waits for the winner (woken by LISTEN/NOTIFY, polling as a fallback) up to the ceiling.
2. The handler runs inside the request's transaction (the outermost block of a unit of work
   that the HTTP layer opens; the use cases' blocks nest in it as savepoints), inside
   :meth:`IdempotentRequests.keep_claim`: the winner extends its claim every third of the claim
   TTL (fenced by its token) until it has finalized, so a live handler slower than the TTL is
   never run a second time; only the claim of an owner that died (and stopped extending) runs
   out.
3. :meth:`IdempotentRequests.complete` stores the response inside that same transaction and
   commits once: the effects and the stored response become durable together, or not at all.
   A 5xx, or an answer with ``Retry-After`` (429, a transient 409), or an exception
   (:meth:`fail`) rolls the effects back and marks the slot ``failed`` so the client may retry
   with the same key.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Iterable
from datetime import timedelta
from typing import Protocol
from uuid import UUID

import attrs
import structlog

from craig.domain import idempotency as model
from craig.domain.constants import FINGERPRINT_INLINE_MAX_BYTES, IDEMPOTENCY_HEARTBEATS_PER_CLAIM_TTL
from craig.domain.fingerprint import cache_key, fingerprint, validate_key
from craig.domain.idempotency import ClaimRequest, Mismatch, Replay, Slot
from craig.ports.errors import PortError
from craig.ports.idempotency import Claimed, ClaimOutcome, Existing, HasIdempotencySlots, IdempotencyStore
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.ids import new_id

log = structlog.get_logger(__name__)


class IdempotentRequestsWork(UnitOfWork, HasIdempotencySlots, Protocol):
    """The unit of work :class:`IdempotentRequests` uses."""


@attrs.frozen
class Busy:
    """The winner is still running after the ceiling (409 + Retry-After)."""

    retry_after_seconds: int


#: What :meth:`IdempotentRequests.begin` decides: run the handler as the slot's owner
#: (:class:`Claimed`: finalize with its slot's token), answer with the stored response
#: (:class:`Replay`), refuse a different body under the same key (:class:`Mismatch`, 422), or
#: give up waiting for the owner (:class:`Busy`). ``Claimed`` is the store's own outcome, and
#: ``Replay`` and ``Mismatch`` the domain's decisions, passed on as they are.
Begin = Claimed | Replay | Mismatch | Busy


@attrs.frozen
class IdempotencyPolicy:
    claim_ttl: timedelta
    wait_ceiling: timedelta
    poll_interval: timedelta
    max_body_bytes: int


class IdempotentRequests:
    def __init__(self, store: IdempotencyStore, policy: IdempotencyPolicy) -> None:
        self.store = store
        self.policy = policy

    @staticmethod
    def claim_request(
        *,
        user_sub: UUID | None,
        method: str,
        path: str,
        key: str,
        content_type: str | None,
        body: bytes,
        query: bytes = b"",
    ) -> ClaimRequest:
        """Validate the key (``InvalidIdempotencyKey``) and fingerprint the body and the query."""
        validate_key(key)
        return ClaimRequest(
            cache_key=cache_key(user_sub, method, path, key),
            method=method.upper(),
            path=path,
            user_sub=user_sub,
            fingerprint=fingerprint(content_type, body, query),
            slot_id=new_id(),
        )

    @classmethod
    async def prepare(
        cls,
        *,
        user_sub: UUID | None,
        method: str,
        path: str,
        key: str,
        content_type: str | None,
        body: bytes,
        query: bytes = b"",
    ) -> ClaimRequest:
        """:meth:`claim_request`, off the event loop for a body larger than
        :data:`~craig.domain.constants.FINGERPRINT_INLINE_MAX_BYTES` (canonicalising is linear in
        the body's size, but a megabyte of it is still milliseconds the other requests would wait)."""
        claim = functools.partial(
            cls.claim_request,
            user_sub=user_sub,
            method=method,
            path=path,
            key=key,
            content_type=content_type,
            body=body,
            query=query,
        )
        if len(body) <= FINGERPRINT_INLINE_MAX_BYTES:
            return claim()
        return await asyncio.to_thread(claim)

    async def begin(self, request: ClaimRequest) -> Begin:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.policy.wait_ceiling.total_seconds()
        outcome: ClaimOutcome = await self.store.try_claim(request, self.policy.claim_ttl)
        while True:
            if isinstance(outcome, Claimed):
                return outcome
            decision = model.decide_claim(outcome.slot, request, outcome.now, self.policy.claim_ttl)
            if isinstance(decision, Replay | Mismatch):
                return decision
            if isinstance(decision, model.Claim):
                # Failed or dead while we looked: race the other waiters for it, atomically.
                outcome = await self.store.try_claim(request, self.policy.claim_ttl)
                continue
            remaining = deadline - loop.time()
            if remaining <= 0:
                return Busy(model.retry_after_seconds(decision.claim_left))
            await self.store.wait_for_change(
                request.cache_key,
                min(self.policy.poll_interval, timedelta(seconds=remaining), decision.claim_left),
            )
            slot, now = await self.store.get(request.cache_key)
            if slot is None:  # purged: start over
                outcome = await self.store.try_claim(request, self.policy.claim_ttl)
            else:
                outcome = Existing(slot, now)

    @contextlib.asynccontextmanager
    async def keep_claim(self, slot: Slot) -> AsyncIterator[None]:
        """Extend ``slot``'s claim every ``claim_ttl / 3`` while the block runs; stopped (and
        awaited, a beat in flight is let finish) however the block ends. A failed extension is
        logged and retried at the next beat; a lost claim stops the beating (the finalize then
        reports ``ClaimLost``)."""
        heartbeat = _Heartbeat(self.store, slot, self.policy.claim_ttl)
        try:
            yield
        finally:
            await heartbeat.stop()

    async def complete(
        self,
        slot: Slot,
        uow: IdempotentRequestsWork,
        status_code: int,
        headers: Iterable[tuple[str, str]],
        body: bytes,
    ) -> bool:
        """Finalize after the handler answered, inside the request's transaction (``uow``'s
        outermost block, which the caller opened before the handler ran).

        A final answer is stored in that transaction and the transaction is committed: the
        handler's effects and the stored response become durable together. Returns False,
        committing nothing, when the answer is not final (a 5xx, or one with ``Retry-After``):
        the caller's block then rolls the effects back and the caller marks the slot failed
        (:meth:`fail`) once it is closed. Raises ``ClaimLost`` or a ``PortError``, nothing
        committed."""
        headers = list(headers)
        if not model.is_final(status_code, headers):
            return False
        response = model.storable_response(status_code, headers, body, self.policy.max_body_bytes)
        await uow.idempotency.finalize_succeeded(slot.cache_key, slot.claim_token, response)
        await uow.commit()
        return True

    async def fail(self, slot: Slot, detail: str) -> None:
        """Best effort: mark the claim failed so a retry need not wait for the claim TTL."""
        try:
            await self.store.finalize_failed(slot.cache_key, slot.claim_token, detail)
        except PortError:
            pass  # the claim TTL recovers the slot


class _Heartbeat:
    """The beats of one claim: a timer, and a task only while a beat runs. Nearly every
    handler finishes long before its first beat is due, so it costs one timer, not a task."""

    def __init__(self, store: IdempotencyStore, slot: Slot, claim_ttl: timedelta) -> None:
        self.store = store
        self.slot = slot
        self.claim_ttl = claim_ttl
        self.interval = (claim_ttl / IDEMPOTENCY_HEARTBEATS_PER_CLAIM_TTL).total_seconds()
        self.loop = asyncio.get_running_loop()
        self.beating: asyncio.Task[None] | None = None
        self.stopped = False
        self.timer: asyncio.TimerHandle | None = self.loop.call_later(self.interval, self._due)

    def _due(self) -> None:
        self.timer = None
        if not self.stopped:
            self.beating = self.loop.create_task(self._beat())

    async def _beat(self) -> None:
        if self.stopped:  # due just before the block ended: the claim is finalized by now
            return
        slot = self.slot
        try:
            if not await self.store.extend_claim(slot.cache_key, slot.claim_token, self.claim_ttl):
                log.warning("idempotency claim lost while its handler ran", cache_key=slot.cache_key)
                return
        except Exception as error:  # the beat must never break the request it keeps alive
            log.warning("idempotency claim could not be extended", cache_key=slot.cache_key, error=str(error))
        if not self.stopped:
            self.timer = self.loop.call_later(self.interval, self._due)

    async def stop(self) -> None:
        self.stopped = True
        if self.timer is not None:
            self.timer.cancel()
        if self.beating is not None:
            await self.beating
