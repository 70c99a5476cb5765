"""Events: staging them in the outbox, relaying the outbox to the broker, consuming them at
most once per consumer (the inbox), and the operators' dead-letter operations."""

from craig.usecases.events.dead_letter_operations import DeadLetterOperations, DeadLetterOperationsWork
from craig.usecases.events.handle_idempotently import (
    AlreadyHandled,
    DeadLettered,
    InboxOutcome,
    InboxWork,
    Processed,
    Retry,
    handle_idempotently,
)
from craig.usecases.events.relay import DrainReport, OutboxRelay
from craig.usecases.events.staging import new_event, stage_event, stage_events

__all__ = [
    "AlreadyHandled",
    "DeadLetterOperations",
    "DeadLetterOperationsWork",
    "DeadLettered",
    "DrainReport",
    "InboxOutcome",
    "InboxWork",
    "OutboxRelay",
    "Processed",
    "Retry",
    "handle_idempotently",
    "new_event",
    "stage_event",
    "stage_events",
]
