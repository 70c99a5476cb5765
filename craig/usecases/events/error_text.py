"""How a failure is written down: the inbox's ``last_error`` and the outbox's publish failures.

Both the inbox (:mod:`craig.usecases.events.handle_idempotently`) and the outbox relay
(:mod:`craig.usecases.events.relay`) store the error that stopped a delivery, in one form: the
exception's type and text, cut to a bounded length so a pathological message cannot bloat a
row.
"""

from __future__ import annotations

from craig.domain.constants import DELIVERY_ERROR_MAX_CHARS


def describe(error: BaseException) -> str:
    """``"<Type>: <text>"``, at most ``DELIVERY_ERROR_MAX_CHARS`` characters."""
    return f"{type(error).__name__}: {error}"[:DELIVERY_ERROR_MAX_CHARS]
