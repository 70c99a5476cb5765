"""Ports: Triage rule sets."""

from __future__ import annotations

from typing import Protocol


class RuleSetRepository(Protocol):
    """To be specified with its use cases."""
