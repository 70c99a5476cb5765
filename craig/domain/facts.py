"""A fact a decision causes: what a use case stages in the outbox, wrapped in an envelope.

Pure decisions return facts alongside the new state; they never build envelopes (ids, times and
the source are the use case's business).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

import attrs


@attrs.frozen(kw_only=True)
class Fact:
    type: str
    aggregate_type: str
    aggregate_id: UUID
    #: No personal details: events travel through the broker in clear.
    payload: Mapping[str, Any]
