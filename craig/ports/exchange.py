"""Ports: Partner exchange."""

from __future__ import annotations

from typing import Protocol


class PartnerRepository(Protocol):
    """To be specified with its use cases."""


class TransactionRepository(Protocol):
    """To be specified with its use cases."""


class SendJobRepository(Protocol):
    """To be specified with its use cases."""
