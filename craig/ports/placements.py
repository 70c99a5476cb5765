"""Ports: Foster homes and placements."""

from __future__ import annotations

from typing import Protocol


class FosterHomeRepository(Protocol):
    """To be specified with its use cases."""


class PlacementRepository(Protocol):
    """To be specified with its use cases."""
