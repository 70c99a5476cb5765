"""The event envelope every Craig event travels in."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

JsonObject = Mapping[str, Any]

#: Why a stored envelope (an outbox or inbox row's) is skipped: it is not one this version can
#: read (written by another version, or by hand). The ``last_error`` it is recorded with.
UNREADABLE_ENVELOPE = "its stored envelope is not an event this version of Craig can read"


def _text_or_none(value: object) -> str | None:
    """A correlation id as text: a request's id (any sane string) or a UUID, kept as given."""
    return None if value is None or value == "" else str(value)


@attrs.frozen(kw_only=True)
class EventEnvelope:
    """An immutable fact that something happened.

    ``id`` is a UUIDv7 made by the caller, so ids sort by creation time. ``type`` doubles as
    the routing key (``cases.contact_attachment_uploaded``). Events of one ``aggregate_id``
    are published in the order they were staged.

    ``correlation_id`` ties the event to what started it: the ``X-Request-ID`` of the request
    that staged it (or of the request that started the work staging it), or, for an exchange
    outcome, the send job's own correlation id. ``traceparent`` is the W3C trace context of the
    code that staged it; it is kept with the staged event so the relay's publish continues that
    trace, and travels in the message's headers, not in its body (see :meth:`to_message`).
    """

    id: UUID
    source: str
    type: str
    occurred_at: datetime
    payload: JsonObject
    aggregate_type: str
    aggregate_id: str
    correlation_id: str | None = attrs.field(default=None, converter=_text_or_none)
    causation_id: UUID | None = None
    traceparent: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "source": self.source,
            "type": self.type,
            "occurred_at": self.occurred_at.isoformat(),
            "payload": dict(self.payload),
            "aggregate_type": self.aggregate_type,
            "aggregate_id": self.aggregate_id,
            "correlation_id": self.correlation_id,
            "causation_id": str(self.causation_id) if self.causation_id else None,
            **({"traceparent": self.traceparent} if self.traceparent else {}),
        }

    def to_message(self) -> dict[str, Any]:
        """The message body consumers read: :meth:`to_json` without the trace context, which
        the message's headers carry (the publisher's span, not the stager's)."""
        body = self.to_json()
        body.pop("traceparent", None)
        return body

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EventEnvelope:
        """Parse an envelope; raises ``ValueError`` (or ``KeyError``/``TypeError``) on bad input."""
        payload = data["payload"]
        if not isinstance(payload, Mapping):
            raise ValueError("payload must be a JSON object")
        correlation = data.get("correlation_id")
        causation = data.get("causation_id")
        return cls(
            id=UUID(str(data["id"])),
            source=str(data["source"]),
            type=str(data["type"]),
            occurred_at=datetime.fromisoformat(str(data["occurred_at"])),
            payload=dict(payload),
            aggregate_type=str(data["aggregate_type"]),
            aggregate_id=str(data["aggregate_id"]),
            correlation_id=str(correlation) if correlation else None,
            causation_id=UUID(str(causation)) if causation else None,
            traceparent=str(data["traceparent"]) if data.get("traceparent") else None,
        )
