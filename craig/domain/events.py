"""The event envelope every Craig event travels in."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

JsonObject = Mapping[str, Any]


@attrs.frozen(kw_only=True)
class EventEnvelope:
    """An immutable fact that something happened.

    ``id`` is a UUIDv7 made by the caller, so ids sort by creation time. ``type`` doubles as
    the routing key (``cases.contact_attachment_uploaded``). Events of one ``aggregate_id``
    are published in the order they were staged.
    """

    id: UUID
    source: str
    type: str
    occurred_at: datetime
    payload: JsonObject
    aggregate_type: str
    aggregate_id: str
    correlation_id: UUID | None = None
    causation_id: UUID | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "source": self.source,
            "type": self.type,
            "occurred_at": self.occurred_at.isoformat(),
            "payload": dict(self.payload),
            "aggregate_type": self.aggregate_type,
            "aggregate_id": self.aggregate_id,
            "correlation_id": str(self.correlation_id) if self.correlation_id else None,
            "causation_id": str(self.causation_id) if self.causation_id else None,
        }

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
            correlation_id=UUID(str(correlation)) if correlation else None,
            causation_id=UUID(str(causation)) if causation else None,
        )
