"""Ports: Cases, contacts and contact attachments."""

from __future__ import annotations

from typing import Protocol


class CaseRepository(Protocol):
    """To be specified with its use cases."""


class ContactRepository(Protocol):
    """To be specified with its use cases."""


class AttachmentRepository(Protocol):
    """To be specified with its use cases."""
