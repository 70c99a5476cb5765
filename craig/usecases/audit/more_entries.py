"""More ways to record: the anonymous caller of public intake, an operator's command with the
ids it names, a refusal recorded on its own, and the names of the fields an update changed.

Companions of :mod:`craig.usecases.audit.record` (whose helpers these build on).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from craig.domain.audit import AuditAction, AuditEntry, AuditOutcome
from craig.usecases.audit.record import ANONYMOUS_ROLE, AuditWork, operator_entry, record_alone
from craig.usecases.ids import new_id


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
        resource_id=None if resource_id is None else str(resource_id),
        outcome=outcome,
        actor_role=ANONYMOUS_ROLE,
        request_id=request_id,
        client_ip=client_ip,
    )


def operator_command_entry(
    action: AuditAction, resource_type: str, resource_id: object = None, *, resource_ids: Iterable[object] = ()
) -> AuditEntry:
    """:func:`~craig.usecases.audit.record.operator_entry`, with the ids the command names."""
    entry = operator_entry(action, resource_type, resource_id)
    return attrs.evolve(entry, resource_ids=tuple(str(ident) for ident in resource_ids))


async def record_denied_alone(uow: AuditWork, entry: AuditEntry) -> None:
    """``entry`` as a ``denied`` one, in a transaction of its own."""
    await record_alone(uow, attrs.evolve(entry, outcome=AuditOutcome.DENIED))


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
