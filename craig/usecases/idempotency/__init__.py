"""Idempotent writes: claim a slot, replay, wait as a loser, finalize atomically with effects."""

from craig.usecases.idempotency.idempotent_requests import (
    Begin,
    Busy,
    IdempotencyPolicy,
    IdempotentRequests,
    IdempotentRequestsWork,
)

__all__ = [
    "Begin",
    "Busy",
    "IdempotencyPolicy",
    "IdempotentRequests",
    "IdempotentRequestsWork",
]
