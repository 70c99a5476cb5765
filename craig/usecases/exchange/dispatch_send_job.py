"""Use case: dispatch one claimed send job and decide its outcome.

The job was claimed by a pass of the :class:`~craig.ports.exchange.SendJobQueue` (leased, its
partner loaded, its rate-limit slot reserved); this sends it through the
:class:`~craig.ports.exchange.PartnerGateway`, outside any transaction, and says what to do with
it: an outcome to record (with its ``exchange.sent`` / ``exchange.send_failed`` event, decided by
:func:`craig.domain.exchange.decide_after_attempt`), or give it back unsent. It records and gives
back nothing itself: the caller (the worker's scheduler) batches outcomes into its next pass.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal

import attrs
import structlog

from craig.domain.event_catalogue import EXCHANGE_SEND_FAILED
from craig.domain.exchange import (
    AttemptDecision,
    DispatchResult,
    JobStatus,
    SendJob,
    TransportFailure,
    decide_after_attempt,
)
from craig.domain.partners import unusable_reason
from craig.ports.clock import Clock
from craig.ports.errors import PortError
from craig.ports.exchange import Claim, Delivery, JobOutcome, Pace, PartnerGateway, PartnerRateLimited
from craig.usecases.exchange.outcome_events import outcome_event
from craig.usecases.exchange.send_policy import SendPolicy

log = structlog.get_logger(__name__)

#: What became of a dispatch, as the worker's metrics name it (``lost``: it crashed).
DispatchName = Literal["sent", "retry", "failed", "deferred"]

#: ``last_error`` of a send abandoned at its deadline.
DEADLINE_PASSED = TransportFailure("timeout", "the dispatch outlived its deadline inside the lease")

_NAMES: dict[JobStatus, DispatchName] = {JobStatus.SENT: "sent", JobStatus.FAILED: "failed"}


@attrs.frozen
class Dispatched:
    """The verdict on one claimed job. Exactly one of ``outcome`` (to record, fenced by the
    claim's lease token) and ``give_back_in`` (``deferred``: give the job back unsent, its
    attempt undone, due in that long) is set."""

    name: DispatchName
    outcome: JobOutcome | None = None
    give_back_in: timedelta | None = None

    @classmethod
    def deferred(cls, wait: timedelta) -> Dispatched:
        return cls("deferred", give_back_in=wait)


class DispatchSendJob:
    """Send one claimed job and decide its outcome. In order:

    * no partner (gone, or unusable: ``claim.unusable`` says why), or a partner whose URLs
      no request can be made to (:func:`~craig.domain.partners.unusable_reason`: stored before
      registration refused them): ``failed`` at once, as no attempt could go better;
    * no granted rate-limit slot: ``deferred`` until the slot (or ``policy.max_rate_wait``);
    * ``too_late`` (the caller held the claim so long that too little of its lease is left for a
      send): ``deferred``, due at once;
    * otherwise the POST, paced by ``pace`` (awaited before every request: the claimed slot
      first, then a slot of its own for the retry after a 401). ``pace`` raising
      :class:`PartnerRateLimited` defers the job until ``retry_after``; any other exception
      from ``pace``, and any :class:`~craig.ports.errors.PortError` (a payload that does not
      decrypt, a database gone), propagates: the job's lease brings it back. The gateway's
      result is decided by ``decide_after_attempt`` with the policy's attempts and backoff. Any
      other exception is the gateway's own bug (it returns what went wrong, and no driver
      exception may leave an adapter): it is decided as a ``protocol`` :class:`TransportFailure`
      naming its class, so the attempt is recorded and retried on the backoff, and the job fails
      after its last attempt, rather than being sent again every time its lease runs out.

    Never writes: the returned :class:`Dispatched` says what to record or give back."""

    def __init__(self, gateway: PartnerGateway, clock: Clock, policy: SendPolicy | None = None) -> None:
        self._gateway = gateway
        self._clock = clock
        self.policy = policy or SendPolicy()

    async def __call__(self, claim: Claim, pace: Pace, *, too_late: bool = False) -> Dispatched:
        job, partner, slot = claim.job, claim.partner, claim.slot
        if partner is None:
            return self._failed(job, claim.unusable or "the partner no longer exists")
        unusable = unusable_reason(partner, partner.send_path)
        if unusable is not None:
            return self._failed(job, unusable)
        if slot is None or not slot.granted:
            return Dispatched.deferred(slot.wait if slot else self.policy.max_rate_wait)
        if too_late:
            return Dispatched.deferred(timedelta(0))
        delivery = Delivery(job.correlation_id, job.payload, job.origin_request_id, job.traceparent)
        pace_failed = False

        async def paced() -> None:
            nonlocal pace_failed
            try:
                await pace()
            except Exception:
                pace_failed = True
                raise

        try:
            result = await self._gateway.send(partner, delivery, paced)
        except PartnerRateLimited as no_slot:
            return Dispatched.deferred(no_slot.retry_after)
        except Exception as error:
            if pace_failed or isinstance(error, PortError):
                raise
            log.exception("the partner gateway crashed; the attempt counts as failed", job_id=str(job.id))
            result = TransportFailure("protocol", f"the gateway crashed, {type(error).__name__}")
        return self.decide(job, result)

    def decide(self, job: SendJob, result: DispatchResult) -> Dispatched:
        """The outcome of an attempt that ended with ``result``."""
        decision = decide_after_attempt(job.attempts, result, self.policy.max_attempts, self.policy.backoff)
        return self._decided(job, decision)

    def abandoned(self, claim: Claim) -> Dispatched:
        """The outcome of a send the caller cancelled at its deadline: a timeout, retried."""
        return self.decide(claim.job, DEADLINE_PASSED)

    def _failed(self, job: SendJob, error: str) -> Dispatched:
        return self._decided(job, AttemptDecision(JobStatus.FAILED, error=error, event_type=EXCHANGE_SEND_FAILED))

    def _decided(self, job: SendJob, decision: AttemptDecision) -> Dispatched:
        # The event tells the job as it will read once the decision is recorded.
        event = outcome_event(job, decision, self._clock.now()) if decision.event_type else None
        return Dispatched(_NAMES.get(decision.status, "retry"), outcome=JobOutcome(job, decision, event))
