"""Ports: The idempotent inbox."""

from __future__ import annotations

from typing import Protocol


class InboxRepository(Protocol):
    """To be specified with its use cases."""
