"""The source every event of a case carries (cases, contacts and their attachments)."""

from __future__ import annotations

EVENT_SOURCE = "craig-cases"
