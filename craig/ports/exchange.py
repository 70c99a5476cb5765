"""Ports: partner exchange (repositories, the partner gateway, the shared rate limiter)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol
from uuid import UUID

import attrs

from craig.domain.events import EventEnvelope
from craig.domain.exchange import AttemptDecision, DispatchResult, SendJob
from craig.domain.exchange_transactions import ExchangeTransaction
from craig.domain.keyset import Keyset, KeysetPage
from craig.domain.pages import Page, PageRequest
from craig.domain.partner_rate_limit import Reservation
from craig.domain.partners import Partner
from craig.ports.errors import PortError, Unavailable

#: The start of the ``last_error`` of a job whose partner's client secret cannot be decrypted.
SECRET_UNDECRYPTABLE = "partner client secret cannot be decrypted"


@attrs.frozen
class UnusablePartner:
    """A stored partner that cannot be used: its client secret does not decrypt (a tampered
    value, or one under a key the key ring no longer holds). ``reason`` says so, in words fit
    for a send job's ``last_error``."""

    id: UUID
    reason: str

    @classmethod
    def undecryptable(cls, partner_id: UUID, error: Exception) -> UnusablePartner:
        return cls(partner_id, f"{SECRET_UNDECRYPTABLE}: {error}")


class PartnerRepository(Protocol):
    """``uow.partners``. Runs in the unit of work's transaction. ``client_secret`` is encrypted
    with ``uow.cipher`` on write and decrypted on read: it never lands in a table in clear; a
    stored secret that does not decrypt makes the read raise ``ValueError``."""

    async def add(self, partner: Partner) -> bool:
        """Insert; False (nothing written) when a partner of that name exists."""
        ...

    async def get(self, partner_id: UUID) -> Partner | None: ...

    async def get_many(self, partner_ids: Collection[UUID]) -> dict[UUID, Partner]:
        """The partners that exist among ``partner_ids``, by id."""
        ...

    async def load_for_sending(self, partner_ids: Collection[UUID]) -> dict[UUID, Partner | UnusablePartner]:
        """As :meth:`get_many`, but a partner whose client secret cannot be decrypted comes back
        as an :class:`UnusablePartner` instead of failing the call: one broken partner must not
        stop the others' jobs."""
        ...

    async def list_page(self, keyset: Keyset) -> KeysetPage[Partner]:
        """Partners by name, then id, after ``keyset.after``."""
        ...

    async def list(self, page: PageRequest) -> Page[Partner]:
        """By name."""
        ...


class TransactionRepository(Protocol):
    """``uow.exchange_transactions``. Runs in the unit of work's transaction. The payload is
    stored only through ``uow.cipher``, bound to its row; one that does not decrypt reads as a
    mapping that raises :class:`craig.ports.errors.UndecryptableData` when used."""

    async def add(self, transaction: ExchangeTransaction) -> None: ...

    async def get(self, transaction_id: UUID) -> ExchangeTransaction | None: ...

    async def purge_delivered(self, older_than: timedelta, limit: int) -> int:
        """Retention: delete up to ``limit`` transactions, oldest first, whose every job is
        ``sent`` with ``completed_at`` more than ``older_than`` ago (database clock), together
        with their jobs. A transaction with a job in any other state (or sent more recently)
        stays, all its jobs with it. Returns the number of jobs deleted (at least the number of
        transactions).

        The cost is bounded by ``limit``, not by the history: a call looks at no more than
        ``limit`` transactions (and their jobs). An adapter may count the ones it keeps against
        ``limit`` and look at them again only once they could have become purgeable (one
        retention period later, or when their last job's completion is old enough), so a call
        may delete fewer than ``limit`` while more are purgeable; the next calls get to them."""
        ...


@attrs.frozen
class SendJobStats:
    by_status: Mapping[str, int]
    #: ``next_attempt_at`` of the longest-waiting due ``pending`` job, on the database clock.
    oldest_due_at: datetime | None
    now: datetime
    #: ``lease_expires_at`` of the ``in_flight`` job whose lease ran out longest ago: a job no
    #: worker sends and none has recovered (no send worker runs), on the database clock.
    oldest_expired_lease_at: datetime | None = None


class SendJobRepository(Protocol):
    """``uow.send_jobs``: the durable send-job queue. Runs in the unit of work's transaction;
    every time (due, lease) is the DATABASE clock, so skewed app servers cannot steal work.
    The caller commits; locks taken by :meth:`claim_due` are held until it does.

    A job's payload is stored only through ``uow.cipher``, bound to the job's row. A payload
    that does not decrypt reads as a mapping that raises
    :class:`craig.ports.errors.UndecryptableData` when used, so the job's other columns (and
    the other jobs read with it) stay readable and nothing is sent in its place."""

    async def add_many(self, jobs: Sequence[SendJob]) -> None: ...

    async def get(self, job_id: UUID) -> SendJob | None: ...

    async def for_transaction(self, transaction_id: UUID) -> list[SendJob]:
        """The transaction's jobs, in creation order."""
        ...

    async def claim_due(self, limit: int, lease: timedelta, exclude: Collection[UUID] = ()) -> list[SendJob]:
        """Up to ``limit`` ``pending`` jobs with ``next_attempt_at <= now``, oldest due first,
        never one in ``exclude``, skipping rows other transactions hold (``FOR UPDATE SKIP
        LOCKED``); each becomes ``in_flight`` with ``attempts + 1``, ``lease_token + 1`` and
        ``lease_expires_at = now + lease``. Returns them as claimed."""
        ...

    async def recover_expired(self, max_attempts: int, limit: int) -> list[SendJob]:
        """``in_flight`` jobs whose lease ran out go back to ``pending`` (due now, attempts kept),
        or to ``failed`` once ``attempts >= max_attempts`` (``decide_lease_expired``). Returns
        the jobs as changed; the caller stages ``exchange.send_failed`` for the failed ones."""
        ...

    async def record(self, outcomes: Sequence[tuple[SendJob, AttemptDecision]]) -> list[SendJob]:
        """Apply each decision to its job (one statement for the set) when the job still carries
        the claim's ``lease_token`` and is ``in_flight`` (or ``pending`` after a lease expiry no
        other worker has claimed since). Returns the jobs that were updated, as updated; a job
        missing from the result lost its lease, and its outcome was dropped."""
        ...

    async def defer(self, job: SendJob, wait: timedelta) -> bool:
        """Give a claimed, unsent job back: ``pending``, due in ``wait``, the attempt undone.
        False when the claim was lost."""
        ...

    async def retry_failed(self, job_id: UUID) -> SendJob | None:
        """``failed`` -> ``pending``, due now, ``attempts`` back to 0, ``lease_token + 1`` (so no
        outcome of an earlier attempt can be recorded over the new one). None when the job is
        not ``failed`` (or does not exist)."""
        ...

    async def failed(self, limit: int) -> list[SendJob]:
        """Up to ``limit`` ``failed`` jobs, the most recently failed first (what an operator
        retries; a partial index on failed jobs serves it, however long the history)."""
        ...

    async def stats(self) -> SendJobStats:
        """Jobs by status (statuses without jobs left out) and the oldest due job. ``pending``
        and ``in_flight`` are exact; ``sent`` and ``failed``, which pile up with history, are
        exact up to ``STATS_EXACT_COUNT_MAX_ROWS`` and may be an estimate above it. The cost
        must not grow with the history."""
        ...


# --- the worker's pass: record, claim, reserve in one atomic step ---------------------------


@attrs.frozen
class JobOutcome:
    """A finished dispatch: the claimed job, what to record, and the event to stage with it."""

    job: SendJob
    decision: AttemptDecision
    #: Staged in the same atomic step, and only if the outcome is recorded (lease still held).
    event: EventEnvelope | None = None


@attrs.frozen
class Claim:
    """A claimed job with its partner and its rate-limit slot (a slot may be one not granted).

    ``partner`` is None when the job cannot be sent at all: its partner no longer exists, or
    exists but is unusable, and then ``unusable`` says why (:class:`UnusablePartner`). ``slot``
    is None exactly when ``partner`` is."""

    job: SendJob
    partner: Partner | None
    slot: Reservation | None = None
    unusable: str | None = None


@attrs.frozen
class PassResult:
    #: Ids of the outcomes that were recorded; the others lost their lease and were dropped.
    recorded: frozenset[UUID]
    #: Oldest due first.
    claims: list[Claim]
    #: Outcomes not taken because their rows were momentarily held by another pass: neither
    #: recorded nor dropped; the caller passes them again.
    busy: frozenset[UUID] = frozenset()


class SendJobQueue(Protocol):
    """The send-job worker's hot path, as ONE atomic step on the database (all or nothing):

    1. record ``outcomes`` exactly as :meth:`SendJobRepository.record` (fenced by lease token)
       and stage the event of each outcome that was recorded;
    2. claim up to ``claim`` due jobs exactly as :meth:`SendJobRepository.claim_due`, never one
       of ``outcomes`` (not even one just recorded back to ``pending``);
    3. load their partners (:meth:`PartnerRepository.load_for_sending`: an unusable partner's
       claims carry its reason and no slot) and reserve their rate-limit slots as
       :meth:`PartnerRateLimits.reserve` does: one reservation per partner for all its claimed
       jobs, ``max_rate_wait`` ahead, in ascending key order.

    ``claim=0`` only records. A pass never keeps jobs it claimed but cannot hand over: they are
    not left to their leases. Adapters may do it in one statement (PostgreSQL) or compose the
    unit of work's repositories (memory); both pass the same contract suite."""

    async def run_pass(
        self, outcomes: Sequence[JobOutcome], claim: int, lease: timedelta, max_rate_wait: timedelta
    ) -> PassResult: ...

    async def wait_for_jobs(self, timeout: timedelta) -> bool:
        """Return True when jobs may have been enqueued since the last claiming pass began
        (NOTIFY), False after ``timeout``. A hint: the next pass finds out."""
        ...

    async def aclose(self) -> None:
        """Release what the queue holds (a connection); a later pass may open it again."""
        ...


# --- the partner's HTTP API -----------------------------------------------------------------


@attrs.frozen
class Delivery:
    """One POST of a job's payload; ``correlation_id`` is the same on every retry.

    ``origin_request_id`` (sent as ``X-Request-ID``) and ``traceparent`` (W3C) tie the POST to
    the request that made the job; the partner needs neither."""

    correlation_id: UUID
    payload: Mapping[str, Any]
    origin_request_id: str | None = None
    traceparent: str | None = None


#: Awaited before every request to the partner's API: waits for a rate-limit slot, or raises.
Pace = Callable[[], Awaitable[None]]


class UpstreamError(PortError):
    """A partner read failed at ``path``; answered as a 502 ``upstream`` problem."""

    code = "upstream"

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"upstream {path}: {detail}")
        self.path = path
        self.detail = detail

    @classmethod
    def upstream(cls, path: str, error: object) -> UpstreamError:
        return cls(path, str(error))


class UpstreamDeserializeError(UpstreamError):
    """The partner answered a body of the wrong shape; answered as a 502 ``upstream_deserialize``."""

    code = "upstream_deserialize"


class PartnerRateLimited(Unavailable):
    """No rate-limit slot for this partner soon enough; retry after ``retry_after``."""

    def __init__(self, partner: str, retry_after: timedelta) -> None:
        super().__init__(f"partner {partner}", f"rate limit reached; next slot in {retry_after}")
        self.retry_after = retry_after


class PartnerGateway(Protocol):
    """HTTP to partner agencies: OAuth2 client credentials (tokens cached and refreshed
    ``TOKEN_REFRESH_LEAD_TIME`` before expiry, one refresh at a time per partner, and looked at
    again once ``pace`` has returned, so a token that expired during the rate-limit wait is never
    sent; a 401 forces one refresh and one retry), timeouts and connection limits from settings. Never called
    inside a database transaction."""

    async def send(self, partner: Partner, delivery: Delivery, pace: Pace) -> DispatchResult:
        """POST the payload to ``partner.send_path`` with ``X-Correlation-ID``. Never raises for
        what the partner answered or for transport faults: those are the result. Exceptions
        raised by ``pace`` propagate."""
        ...

    async def get_json(self, partner: Partner, path: str, params: Mapping[str, str], pace: Pace) -> Any:
        """GET ``path``; the decoded JSON body of a 2xx. Raises :class:`UpstreamError` for any
        other status or a transport fault, :class:`UpstreamDeserializeError` for a body that is
        not JSON."""
        ...

    async def aclose(self) -> None: ...


# --- the shared rate limit ------------------------------------------------------------------


class PartnerRateLimits(Protocol):
    """``uow.partner_rate_limits``: requests per minute per partner, shared by EVERY process
    (state lives in the database, on its clock): a generic cell rate algorithm whose slots are
    spaced ``60 s / rate``. Runs in the unit of work's transaction and locks the key's row until
    it ends, so keep that transaction short; a worker reserves in its claim transaction, after
    claiming, one key at a time in ascending order (no lock cycles between workers)."""

    async def reserve(self, key: UUID, rate_per_minute: int, count: int, max_wait: timedelta) -> list[Reservation]:
        """Reserve up to ``count`` consecutive slots starting within ``max_wait``. Returns
        ``count`` reservations: the granted ones first (each with its own wait), then denied
        ones carrying the wait until the next free slot. Nothing is taken unless the caller
        commits."""
        ...


# --- what a unit of work offers, for the use cases that name it -------------------------


class HasPartners(Protocol):
    """A unit of work with ``partners`` (a :class:`PartnerRepository` on its transaction)."""

    @property
    def partners(self) -> PartnerRepository: ...


class HasExchangeTransactions(Protocol):
    """A unit of work with ``exchange_transactions`` (a :class:`TransactionRepository` on its transaction)."""

    @property
    def exchange_transactions(self) -> TransactionRepository: ...


class HasSendJobs(Protocol):
    """A unit of work with ``send_jobs`` (a :class:`SendJobRepository` on its transaction)."""

    @property
    def send_jobs(self) -> SendJobRepository: ...


class HasPartnerRateLimits(Protocol):
    """A unit of work with ``partner_rate_limits`` (a :class:`PartnerRateLimits` on its transaction)."""

    @property
    def partner_rate_limits(self) -> PartnerRateLimits: ...
