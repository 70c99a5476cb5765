"""The audit trail: who did what to which record, when, and whether they were allowed to.

An entry names the actor, the action and the resource by id, and for updates the *names* of
the fields that changed: never a value of personal data. It is written in the same transaction
as the action it records, and later sealed into a hash chain (:mod:`craig.domain.audit_chain`):

    hash_n = SHA-256(hash_{n-1} || canonical(entry_n)),  hash_0 = GENESIS_HASH

so that changing, removing or inserting an entry anywhere breaks every hash after it.
"""

from __future__ import annotations

import copy
import enum
import functools
import hashlib
import ipaddress
import json
import re
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import attrs

from craig.domain.constants import (
    AUDIT_ADDRESSES_CACHED,
    AUDIT_MAX_CHANGED_FIELDS,
    AUDIT_MAX_RESOURCE_IDS,
    AUDIT_TEXT_MAX_LENGTH,
)


class AuditOutcome(enum.StrEnum):
    ALLOWED = "allowed"
    #: The action was refused (403, or 404 for a record the actor may not see).
    DENIED = "denied"


class AuditAction(enum.StrEnum):
    """The closed vocabulary of actions. A refused attempt is its action with ``outcome=denied``."""

    READ = "read"
    LIST = "list"
    #: A filtered list (the case search); like a list, it records the ids it returned.
    SEARCH = "search"
    CREATE = "create"
    UPDATE = "update"
    CLOSE = "close"
    REOPEN = "reopen"
    ASSIGN = "assign"
    UNASSIGN = "unassign"
    SCREEN = "screen"
    UPLOAD = "upload"
    DOWNLOAD = "download"
    REPLAY = "replay"
    # operator actions (the command line)
    DLX_REPLAY = "dlx_replay"
    DLX_DISCARD = "dlx_discard"
    ATTACHMENT_DISCARD = "attachment_discard"
    UNROUTED_REPLAY = "unrouted_replay"
    UNROUTED_DISCARD = "unrouted_discard"
    KEYS_ROTATE = "keys_rotate"
    JOB_RETRY = "job_retry"
    OUTBOX_RETRY = "outbox_retry"
    OUTBOX_DISCARD = "outbox_discard"
    RULE_SET_VERSION = "rule_set_version"


#: Actions that change nothing; a case's history leaves them out.
READ_ACTIONS: frozenset[AuditAction] = frozenset(
    {
        AuditAction.READ,
        AuditAction.LIST,
        AuditAction.SEARCH,
        # A file served, and a stored answer sent again: reads, whoever did them.
        AuditAction.DOWNLOAD,
        AuditAction.REPLAY,
    }
)
OPERATOR_ACTIONS: frozenset[AuditAction] = frozenset(
    {
        AuditAction.DLX_REPLAY,
        AuditAction.DLX_DISCARD,
        AuditAction.ATTACHMENT_DISCARD,
        AuditAction.UNROUTED_REPLAY,
        AuditAction.UNROUTED_DISCARD,
        AuditAction.KEYS_ROTATE,
        AuditAction.JOB_RETRY,
        AuditAction.OUTBOX_RETRY,
        AuditAction.OUTBOX_DISCARD,
        AuditAction.RULE_SET_VERSION,
    }
)

#: The hash the first entry of a chain follows: SHA-256 of the ASCII text ``craig audit chain``.
GENESIS_HASH: bytes = hashlib.sha256(b"craig audit chain").digest()
#: The version of :func:`canonical`; it is part of every encoded entry.
CANONICAL_VERSION = 1

_RESOURCE_TYPE = re.compile(r"[a-z][a-z0-9_]{0,63}")
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,63}")


def clean_text(value: object) -> str | None:
    """Free text from outside (a name from a token, a header, a path segment) as an entry keeps
    it: control characters and lone surrogates removed, cut to ``AUDIT_TEXT_MAX_LENGTH``
    characters; empty becomes None. Recording an action never fails on what a client sent."""
    if value is None:
        return None
    text = str(value)
    if not text.isprintable():  # printable text holds no control character and no surrogate
        text = "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cs"))
    # Cut, then stripped again: what is kept must come out of a second cleaning unchanged (an
    # entry read back from its row is cleaned again, and the chain's hash must cover the row).
    text = text.strip()[:AUDIT_TEXT_MAX_LENGTH].rstrip()
    return text or None


def _ids(values: Iterable[object]) -> tuple[str, ...]:
    if isinstance(values, str | bytes):
        raise ValueError("resource_ids is a list of ids, not one string")
    cleaned = tuple(text for text in (clean_text(v) for v in values) if text is not None)
    if len(cleaned) > AUDIT_MAX_RESOURCE_IDS:
        raise ValueError(f"an entry carries at most {AUDIT_MAX_RESOURCE_IDS} resource ids")
    return cleaned


def _field_names(values: Iterable[str]) -> tuple[str, ...]:
    if isinstance(values, str | bytes):
        raise ValueError("changed_fields is a list of names, not one string")
    names = tuple(sorted(set(values)))
    if len(names) > AUDIT_MAX_CHANGED_FIELDS:
        raise ValueError(f"an entry names at most {AUDIT_MAX_CHANGED_FIELDS} changed fields")
    for name in names:
        if not isinstance(name, str) or not _FIELD_NAME.fullmatch(name):
            raise ValueError(f"not a field name: {name!r}")
    return names


def _client_ip(value: object) -> str | None:
    if value is None:
        return None
    return _normal_address(str(value))


@functools.lru_cache(maxsize=AUDIT_ADDRESSES_CACHED)
def _normal_address(text: str) -> str:
    """An address as an entry keeps it (``ValueError`` for one that is not: never cached)."""
    return str(ipaddress.ip_address(text))


def _instant(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("an audit time must carry its time zone")
    return value.astimezone(UTC)


def _resource_type(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not isinstance(value, str) or not _RESOURCE_TYPE.fullmatch(value):
        raise ValueError(f"resource_type must be a lower-case identifier, got {value!r}")


def _positive(_: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{attribute.name} counts from 1")


@attrs.frozen(kw_only=True)
class AuditEntry:
    """One recorded action. ``at`` is the database's clock when the entry was written (None
    before); ``seq`` its position in the chain (None until it is sealed).

    ``actor`` is the token's subject, None for an anonymous caller or an operator at the command
    line. ``resource_ids`` holds the ids a list call returned; ``changed_fields`` the names (never
    the values) of the fields an update changed, sorted.
    """

    id: UUID
    action: AuditAction = attrs.field(converter=AuditAction)
    resource_type: str = attrs.field(validator=_resource_type)
    outcome: AuditOutcome = attrs.field(default=AuditOutcome.ALLOWED, converter=AuditOutcome)
    actor: UUID | None = None
    actor_role: str | None = attrs.field(default=None, converter=clean_text)
    actor_name: str | None = attrs.field(default=None, converter=clean_text)
    resource_id: str | None = attrs.field(default=None, converter=clean_text)
    resource_ids: tuple[str, ...] = attrs.field(default=(), converter=_ids)
    case_id: UUID | None = None
    request_id: str | None = attrs.field(default=None, converter=clean_text)
    client_ip: str | None = attrs.field(default=None, converter=_client_ip)
    changed_fields: tuple[str, ...] = attrs.field(default=(), converter=_field_names)
    at: datetime | None = attrs.field(default=None, converter=_instant)
    seq: int | None = attrs.field(default=None, validator=_positive)

    @property
    def is_change(self) -> bool:
        """True for an allowed action other than a read (what a case's history shows): a refused
        attempt changed nothing, and who tried is for supervisors to see (``GET /v1/audit``), not
        for every worker on the case."""
        return self.outcome is AuditOutcome.ALLOWED and self.action not in READ_ACTIONS

    def written_at(self, at: datetime) -> AuditEntry:
        """This entry as written: stamped ``at`` by the database, not sealed yet. Its other
        fields were converted when it was made, so they are copied, not converted again."""
        written = copy.copy(self)
        object.__setattr__(written, "at", _instant(at))
        object.__setattr__(written, "seq", None)
        return written


def _text_of(value: UUID | None) -> str | None:
    return None if value is None else str(value)


def canonical(entry: AuditEntry) -> bytes:
    """The entry's bytes as the chain hashes them: JSON with every field (null when absent),
    keys sorted, no spaces, non-ASCII escaped as ``\\uXXXX``, times as UTC
    ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, plus ``"v": 1``. Only a written and sealed entry (``at`` and
    ``seq`` set) has one."""
    if entry.at is None or entry.seq is None:
        raise ValueError("only a written, sealed entry (at and seq set) has a canonical form")
    document = {
        "v": CANONICAL_VERSION,
        "id": str(entry.id),
        "seq": entry.seq,
        "at": entry.at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "actor": _text_of(entry.actor),
        "actor_role": entry.actor_role,
        "actor_name": entry.actor_name,
        "action": entry.action.value,
        "resource_type": entry.resource_type,
        "resource_id": entry.resource_id,
        "resource_ids": list(entry.resource_ids),
        "case_id": _text_of(entry.case_id),
        "outcome": entry.outcome.value,
        "request_id": entry.request_id,
        "client_ip": entry.client_ip,
        "changed_fields": list(entry.changed_fields),
    }
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def chain_hash(prev_hash: bytes, entry: AuditEntry) -> bytes:
    """``SHA-256(prev_hash || canonical(entry))``."""
    return hashlib.sha256(prev_hash + canonical(entry)).digest()
