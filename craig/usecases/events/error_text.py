"""How a failure is written down: the inbox's ``last_error`` and the outbox's publish failures.

Both the inbox (:mod:`craig.usecases.events.handle_idempotently`) and the outbox relay
(:mod:`craig.usecases.events.relay`) store the error that stopped a delivery, in one form: the
exception's type and text, cut to a bounded length so a pathological message cannot bloat a
row.
"""

from __future__ import annotations

MAX_ERROR_LENGTH = 2000


def describe(error: BaseException) -> str:
    """``"<Type>: <text>"``, at most ``MAX_ERROR_LENGTH`` characters."""
    return f"{type(error).__name__}: {error}"[:MAX_ERROR_LENGTH]
