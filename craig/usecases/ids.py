"""Identifiers: UUIDv7, made by the application (PostgreSQL 15 has no ``uuidv7()``).

UUIDv7 ids sort by creation time, which keeps B-tree inserts local and lets ids stand in for
creation order across processes (to the millisecond).
"""

from __future__ import annotations

import uuid

import uuid_utils


def new_id() -> uuid.UUID:
    return uuid.UUID(bytes=uuid_utils.uuid7().bytes)
