"""Reading the audit trail: filters, newest-first pages and their opaque keyset cursors."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID

import attrs

from craig.domain.audit import AuditAction, AuditEntry, AuditOutcome
from craig.domain.constants import CASEWORK_EARLIEST_TIMESTAMP, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from craig.domain.errors import InvalidCursor, InvalidInput
from craig.domain.instants import compared_instant

_CURSOR_VERSION = "a1"
_CURSOR_MAX_LENGTH = 200
_CURSOR_LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def _action(value: str | None) -> AuditAction | None:
    return None if value is None else AuditAction(value)


def _outcome(value: str | None) -> AuditOutcome | None:
    return None if value is None else AuditOutcome(value)


def _resource_type(value: str | None) -> str | None:
    if value is not None and "\x00" in value:  # no stored type holds one, and PostgreSQL refuses it
        raise InvalidInput("resource_type must not contain a NUL character", field="resource_type")
    return value


@attrs.frozen(kw_only=True)
class AuditFilter:
    """Every field set must match. ``since`` is inclusive, ``until`` exclusive (``at``).
    ``changes_only`` keeps only allowed changes (a case's history; :attr:`AuditEntry.is_change`)."""

    case_id: UUID | None = None
    actor: UUID | None = None
    action: AuditAction | None = attrs.field(default=None, converter=_action)
    resource_type: str | None = attrs.field(default=None, converter=_resource_type)
    outcome: AuditOutcome | None = attrs.field(default=None, converter=_outcome)
    since: datetime | None = attrs.field(default=None, converter=compared_instant)
    until: datetime | None = attrs.field(default=None, converter=compared_instant)
    changes_only: bool = False

    def __attrs_post_init__(self) -> None:
        for moment in (self.since, self.until):
            if moment is not None and moment.tzinfo is None:
                raise InvalidInput("since and until need a time zone (e.g. 2026-01-01T00:00:00Z)")

    def matches(self, entry: AuditEntry) -> bool:
        at = entry.at
        return (
            (self.case_id is None or entry.case_id == self.case_id)
            and (self.actor is None or entry.actor == self.actor)
            and (self.action is None or entry.action is self.action)
            and (self.resource_type is None or entry.resource_type == self.resource_type)
            and (self.outcome is None or entry.outcome is self.outcome)
            and (self.since is None or (at is not None and at >= self.since))
            and (self.until is None or (at is not None and at < self.until))
            and (not self.changes_only or entry.is_change)
        )


@attrs.frozen
class AuditCursor:
    """Where a page ended: the ``(at, id)`` of its last entry. Pages go newest first, so the
    next page holds the entries strictly before it."""

    at: datetime
    id: UUID

    def encode(self) -> str:
        raw = f"{_CURSOR_VERSION}|{self.at.isoformat()}|{self.id}".encode("ascii")
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, text: str) -> AuditCursor:
        """Raise :class:`InvalidInput` for anything this code did not hand out."""
        try:
            if len(text) > _CURSOR_MAX_LENGTH:
                raise ValueError("too long")
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode("ascii")
            version, at, ident = raw.split("|")
            cursor = cls(datetime.fromisoformat(at), UUID(ident))
            if version != _CURSOR_VERSION or cursor.at.tzinfo is None:
                raise ValueError("not ours")
            # An entry is stamped by the database's clock: a time far outside is not one of ours,
            # and would fail in the query (a date PostgreSQL or Python cannot hold) instead.
            if not CASEWORK_EARLIEST_TIMESTAMP <= cursor.at < _CURSOR_LATEST:
                raise ValueError("out of range")
        except (ValueError, binascii.Error, UnicodeDecodeError) as error:
            raise InvalidCursor("cursor is not one this API handed out; start again without it") from error
        return cursor

    @classmethod
    def after(cls, entry: AuditEntry) -> AuditCursor:
        if entry.at is None:
            raise ValueError("an entry that was not written has no place in a page")
        return cls(entry.at, entry.id)


def page_size(limit: int | None) -> int:
    """``limit`` checked (1 to ``MAX_PAGE_SIZE``; None: the default)."""
    if limit is None:
        return DEFAULT_PAGE_SIZE
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidInput(f"limit must lie between 1 and {MAX_PAGE_SIZE}", field="limit")
    return limit


@attrs.frozen
class AuditPage:
    """Entries newest first; ``next_cursor`` (opaque) fetches the next page, None at the end."""

    items: Sequence[AuditEntry]
    next_cursor: str | None

    @classmethod
    def of(cls, rows: Sequence[AuditEntry], limit: int) -> AuditPage:
        """The page from up to ``limit + 1`` rows (one more than shown says another page exists)."""
        items = list(rows[:limit])
        more = len(rows) > limit
        return cls(items, AuditCursor.after(items[-1]).encode() if more and items else None)
