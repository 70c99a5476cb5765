"""Recording in the audit trail what a use case did, or was refused.

A use case appends its entry inside its own block, so the entry commits with what it records
(a write and its entry together or not at all) and a read whose entry cannot be written fails
instead of being served. :func:`refusals_recorded` wraps the block: a :class:`NotFound` or
:class:`Forbidden` raised inside is kept as a ``denied`` entry, written in a block of its own
on the same unit of work (the refused block rolled back; when the idempotency layer holds the
request's transaction, the denial commits with the stored answer), and then raised again.
"""

from __future__ import annotations

import getpass
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol
from uuid import UUID

import attrs

from craig.domain.access import Principal
from craig.domain.audit import AuditAction, AuditEntry, AuditOutcome
from craig.domain.constants import AUDIT_MAX_RESOURCE_IDS
from craig.domain.errors import Forbidden, NotFound
from craig.ports.audit import HasAudit
from craig.ports.unit_of_work import UnitOfWork
from craig.usecases.audit.resource_types import REQUEST
from craig.usecases.ids import new_id

#: The role an operator at the command line is recorded with.
OPERATOR_ROLE = "operator"
#: The role of a caller without a token (public intake).
ANONYMOUS_ROLE = "anonymous"


class AuditWork(UnitOfWork, HasAudit, Protocol):
    """A unit of work that records audit entries."""


def audit_entry(
    principal: Principal,
    action: AuditAction,
    resource_type: str,
    resource_id: object = None,
    *,
    case_id: UUID | None = None,
    resource_ids: Iterable[object] = (),
    changed_fields: Iterable[str] = (),
    outcome: AuditOutcome = AuditOutcome.ALLOWED,
) -> AuditEntry:
    """One entry by ``principal`` (never a value of personal data: ids and field names only)."""
    return AuditEntry(
        id=new_id(),
        action=action,
        resource_type=resource_type,
        resource_id=resource_id,
        resource_ids=resource_ids,
        case_id=case_id,
        changed_fields=tuple(changed_fields),
        outcome=outcome,
        actor=principal.sub,
        actor_role=str(principal.role),
        actor_name=principal.name,
        request_id=principal.request_id,
        client_ip=principal.client_ip,
    )


def operator_entry(
    action: AuditAction,
    resource_type: str,
    resource_id: object = None,
    *,
    resource_ids: Iterable[object] = (),
    case_id: UUID | None = None,
) -> AuditEntry:
    """An entry for an operator's command (no token: the operating-system user is the name),
    with the ids the command names (and the case it touched, so it shows in its history)."""
    try:
        name: str | None = getpass.getuser()
    except (KeyError, OSError):
        name = None
    return AuditEntry(
        id=new_id(),
        action=action,
        resource_type=resource_type,
        resource_id=resource_id,
        resource_ids=resource_ids,
        case_id=case_id,
        actor_role=OPERATOR_ROLE,
        actor_name=name,
    )


def anonymous_entry(
    action: AuditAction,
    resource_type: str,
    resource_id: object = None,
    *,
    request_id: str | None = None,
    client_ip: str | None = None,
    outcome: AuditOutcome = AuditOutcome.ALLOWED,
) -> AuditEntry:
    """An entry for a caller without a token (the public intake form): no actor, the role
    ``anonymous``, and the request's id and client address when known."""
    return AuditEntry(
        id=new_id(),
        action=action,
        resource_type=resource_type,
        resource_id=resource_id,
        outcome=outcome,
        actor_role=ANONYMOUS_ROLE,
        request_id=request_id,
        client_ip=client_ip,
    )


def replay_entry(principal: Principal | None, method: str, path: str, case_id: UUID | None, status: int) -> AuditEntry:
    """An idempotent replay: the stored answer (of ``status``) to ``method path`` served again.
    A stored refusal (403, or 404 for a record the actor may not see or that does not exist) is
    ``denied``, as its first answer was: a retried refusal is still a refused attempt."""
    outcome = AuditOutcome.DENIED if status in (403, 404) else AuditOutcome.ALLOWED
    if principal is not None:
        return audit_entry(principal, AuditAction.REPLAY, REQUEST, f"{method} {path}", case_id=case_id, outcome=outcome)
    return anonymous_entry(AuditAction.REPLAY, REQUEST, f"{method} {path}", outcome=outcome)


def changed_field_names(before: Any, after: Any, *, ignore: Iterable[str] = ()) -> tuple[str, ...]:
    """The names of the attributes (of two instances of one attrs class) whose values differ,
    sorted; ``ignore`` leaves some out (a version, a timestamp). Names only, never values."""
    skipped = set(ignore)
    names = [
        field.name
        for field in attrs.fields(type(before))
        if field.name not in skipped and getattr(before, field.name) != getattr(after, field.name)
    ]
    return tuple(sorted(names))


async def record_alone(uow: AuditWork, entry: AuditEntry) -> None:
    """Append ``entry`` in a transaction of its own (an answer no use case runs for)."""
    async with uow:
        await uow.audit.append([entry])
        await uow.commit()


async def record(
    uow: HasAudit,
    principal: Principal,
    action: AuditAction,
    resource_type: str,
    resource_id: object = None,
    *,
    case_id: UUID | None = None,
    resource_ids: Iterable[object] = (),
    changed_fields: Iterable[str] = (),
) -> None:
    """Append one ``allowed`` entry in the caller's open block."""
    entry = audit_entry(
        principal,
        action,
        resource_type,
        resource_id,
        case_id=case_id,
        resource_ids=resource_ids,
        changed_fields=changed_fields,
    )
    await uow.audit.append([entry])


@asynccontextmanager
async def refusals_recorded(
    uow: AuditWork,
    principal: Principal,
    action: AuditAction,
    resource_type: str,
    resource_id: object = None,
    *,
    case_id: UUID | None = None,
) -> AsyncIterator[None]:
    """Around a use case's block: a refusal raised inside becomes a ``denied`` entry."""
    try:
        yield
    except (NotFound, Forbidden):
        entry = audit_entry(principal, action, resource_type, resource_id, case_id=case_id, outcome=AuditOutcome.DENIED)
        await record_alone(uow, entry)
        raise


def operator_entries(
    action: AuditAction, resource_type: str, resource_id: object, ids: Sequence[object]
) -> list[AuditEntry]:
    """:func:`operator_entry` for a command that named ``ids``: one entry per
    ``AUDIT_MAX_RESOURCE_IDS`` of them, in order (none for no ids)."""
    return [
        operator_entry(action, resource_type, resource_id, resource_ids=ids[start : start + AUDIT_MAX_RESOURCE_IDS])
        for start in range(0, len(ids), AUDIT_MAX_RESOURCE_IDS)
    ]
