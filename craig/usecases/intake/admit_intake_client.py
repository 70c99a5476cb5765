"""Use case: admit one public intake request against its client's rate limit.

The request pipeline runs it first, before anything else of the request and in particular
before an ``Idempotency-Key`` claims a slot, so a refused request leaves no row behind. The
limit is counted in a short transaction of its own, shared by every instance.
"""

from __future__ import annotations

from craig.domain.errors import DomainError
from craig.domain.rate_limit import client_bucket
from craig.ports.rate_limit import RateLimiter
from craig.usecases.intake.policy import IntakePolicy


class RateLimited(DomainError):
    """Too many referrals from one client IP (HTTP 429 with ``Retry-After``)."""

    code = "rate-limited"

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__(f"too many referrals from this address; retry after {retry_after_seconds} s")
        self.retry_after_seconds = retry_after_seconds


class AdmitIntakeClient:
    """Count one intake request against its client's budget: ``policy.rate_limit`` per
    ``policy.rate_window`` per IPv4 address or IPv6 /64 (:func:`client_bucket`). Every attempt
    counts, whatever becomes of it. Raises ``RateLimited`` past the budget (a refused attempt
    consumes nothing), ``Unavailable`` when the limiter's storage is down."""

    def __init__(self, limiter: RateLimiter, policy: IntakePolicy) -> None:
        self.limiter = limiter
        self.policy = policy

    async def __call__(self, client_ip: str | None) -> None:
        bucket = client_bucket("intake", client_ip)
        decision = await self.limiter.hit(bucket, self.policy.rate_limit, self.policy.rate_window)
        if not decision.allowed:
            raise RateLimited(decision.retry_after_seconds)
