"""Ports: Public intake referrals."""

from __future__ import annotations

from typing import Protocol


class ReferralRepository(Protocol):
    """To be specified with its use cases."""
