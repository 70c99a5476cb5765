"""Operators' batch work: the retention purge and the rotation of field-encryption keys."""

from craig.usecases.operations.purge_expired import Purge, PurgeExpired, Retention
from craig.usecases.operations.rotate_keys import ColumnReport, Progress, RotateKeys

__all__ = ["ColumnReport", "Progress", "Purge", "PurgeExpired", "Retention", "RotateKeys"]
