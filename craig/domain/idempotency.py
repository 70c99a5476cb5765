"""The idempotency claim state machine.

A *slot* is one (user, method, path, Idempotency-Key). Its life::

    (none) --claim--> processing --finalize ok--> succeeded      (terminal; replayed forever)
                          |   \\--finalize 5xx/exception--> failed --reclaim--> processing
                          \\--claim TTL passes (owner died)------------reclaim--> processing

Every (re)claim bumps ``claim_token`` (a fencing token): a finalize applies only while its token
is still current, so an owner whose claim expired and was recovered cannot overwrite the new
owner's result. A live owner extends its claim while its handler runs (a heartbeat), so only
the claim of an owner that died runs out. ``slot_id`` is born with the slot and survives every
re-claim; a slot made again for the same key after the old one was purged gets a new one.
Everything here is a pure function of its arguments; ``now`` is the database clock.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from datetime import datetime, timedelta
from uuid import UUID

import attrs

from craig.domain.errors import DomainError

#: Response headers worth replaying; everything else is recomputed by the server.
REPLAYED_HEADERS = ("content-type", "location", "etag")


class SlotStatus(enum.StrEnum):
    PROCESSING = "processing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@attrs.frozen
class StoredResponse:
    status_code: int
    headers: tuple[tuple[str, str], ...]
    body: bytes
    body_too_large: bool = False


@attrs.frozen(kw_only=True)
class ClaimRequest:
    cache_key: str
    method: str
    path: str
    user_sub: UUID | None
    fingerprint: str
    #: The identity the slot gets if this request creates it (a re-claim keeps the slot's own).
    slot_id: UUID


@attrs.frozen(kw_only=True)
class Slot:
    cache_key: str
    method: str
    path: str
    user_sub: UUID | None
    fingerprint: str
    status: SlotStatus
    claim_token: int
    slot_id: UUID
    started_at: datetime
    claim_expires_at: datetime
    finished_at: datetime | None = None
    response: StoredResponse | None = None
    error_detail: str | None = None

    def is_live_claim(self, now: datetime) -> bool:
        return self.status is SlotStatus.PROCESSING and self.claim_expires_at > now


# --- decisions -------------------------------------------------------------------------------


@attrs.frozen
class Claim:
    """Run the handler: ``slot`` is the new processing slot (fresh, recovered or retried)."""

    slot: Slot


@attrs.frozen
class Replay:
    """Answer with the stored response; the handler does not run."""

    response: StoredResponse


@attrs.frozen
class Wait:
    """Another request owns the slot; wait for it at most ``claim_left``."""

    claim_left: timedelta


@attrs.frozen
class Mismatch:
    """The key was used before with a different request body (HTTP 422)."""


ClaimDecision = Claim | Replay | Wait | Mismatch


def new_slot(request: ClaimRequest, now: datetime, ttl: timedelta, token: int = 1, slot_id: UUID | None = None) -> Slot:
    """A processing slot; ``token`` and ``slot_id`` are the earlier slot's when re-claiming."""
    return Slot(
        cache_key=request.cache_key,
        method=request.method,
        path=request.path,
        user_sub=request.user_sub,
        fingerprint=request.fingerprint,
        status=SlotStatus.PROCESSING,
        claim_token=token,
        slot_id=slot_id or request.slot_id,
        started_at=now,
        claim_expires_at=now + ttl,
    )


def decide_claim(existing: Slot | None, request: ClaimRequest, now: datetime, ttl: timedelta) -> ClaimDecision:
    """What a request should do with its slot, given the slot's current row.

    The reclaim rule (a ``failed`` slot, or a ``processing`` slot whose claim has run out, is
    claimed again under the next fencing token, keeping its ``slot_id``, and only by a request
    with the same fingerprint) is owned by the PostgreSQL adapter's SQL: ``_CLAIM`` in
    ``craig/adapters/postgres/idempotency.py`` applies it in the same atomic statement as the
    claim, for speed, on the database clock. This function mirrors that statement for the
    memory adapter (and tells the use case what an existing slot means for its request);
    ``tests/contract/test_idempotency_reclaim.py`` drives both adapters through the same
    cases, each checked against this function, so the two cannot drift."""
    if existing is None:
        return Claim(new_slot(request, now, ttl))
    if existing.fingerprint != request.fingerprint:
        return Mismatch()
    if existing.status is SlotStatus.SUCCEEDED:
        assert existing.response is not None, "a succeeded slot always stores its response"
        return Replay(existing.response)
    if existing.is_live_claim(now):
        return Wait(existing.claim_expires_at - now)
    # failed, or processing whose owner died: recover it under a new fencing token.
    return Claim(new_slot(request, now, ttl, token=existing.claim_token + 1, slot_id=existing.slot_id))


class ClaimLost(DomainError):
    """The claim expired and another request took the slot over; this owner must not finalize."""

    code = "idempotency-claim-lost"


def _check_owner(slot: Slot, token: int) -> None:
    if slot.status is not SlotStatus.PROCESSING or slot.claim_token != token:
        raise ClaimLost(f"idempotency slot is now {slot.status} with token {slot.claim_token}; this claim held {token}")


def extend_claim(slot: Slot, token: int, now: datetime, ttl: timedelta) -> Slot:
    """The owner's heartbeat: its claim now runs until ``now + ttl``. ``ClaimLost`` when
    ``token`` no longer owns a processing slot."""
    _check_owner(slot, token)
    return attrs.evolve(slot, claim_expires_at=now + ttl)


def finalize_succeeded(slot: Slot, token: int, response: StoredResponse, now: datetime) -> Slot:
    _check_owner(slot, token)
    return attrs.evolve(slot, status=SlotStatus.SUCCEEDED, finished_at=now, response=response)


def finalize_failed(slot: Slot, token: int, detail: str, now: datetime) -> Slot:
    _check_owner(slot, token)
    return attrs.evolve(slot, status=SlotStatus.FAILED, finished_at=now, response=None, error_detail=detail)


# --- responses ---------------------------------------------------------------------------------


#: Precondition answers (412 stale If-Match, 428 missing If-Match): never stored, see is_final.
PRECONDITION_STATUSES = frozenset({412, 428})


def is_final(status_code: int, headers: Iterable[tuple[str, str]] = ()) -> bool:
    """Whether an answer is the request's outcome, to be stored and replayed.

    Below 500 it is (a 404 or a 422 will not change on retry), with one exception: an answer
    carrying ``Retry-After`` (a 429, a 409 "concurrent update, retry") tells the client to come
    back, and replaying it forever would contradict it. Nor are 412 and 428: they judge the
    ``If-Match`` header, which the fingerprint does not cover, so a client that read the resource
    again retries with the same key and a fresh ETag. Such answers, like every 5xx, mark the slot
    failed so the same key can be retried.
    """
    if status_code >= 500 or status_code in PRECONDITION_STATUSES:
        return False
    return not any(name.lower() == "retry-after" for name, _ in headers)


def storable_response(
    status_code: int, headers: Iterable[tuple[str, str]], body: bytes, max_body_bytes: int
) -> StoredResponse:
    kept = tuple((name.lower(), value) for name, value in headers if name.lower() in REPLAYED_HEADERS)
    if len(body) > max_body_bytes:
        return StoredResponse(status_code, kept, b"", body_too_large=True)
    return StoredResponse(status_code, kept, body)


def retry_after_seconds(claim_left: timedelta) -> int:
    """Seconds left on the winner's claim, rounded up, at least 1."""
    seconds = claim_left.total_seconds()
    return max(1, int(seconds) + (0 if seconds == int(seconds) else 1))
