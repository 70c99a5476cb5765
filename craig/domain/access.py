"""Who is asking: the authenticated principal and its role."""

from __future__ import annotations

import enum
from uuid import UUID

import attrs

from craig.domain.errors import Forbidden


class Role(enum.StrEnum):
    CASEWORKER = "caseworker"
    SUPERVISOR = "supervisor"
    ADMIN = "admin"
    #: Screens the intake queue; sees only the cases it is assigned to.
    SCREENER = "screener"


@attrs.frozen
class Principal:
    """An authenticated caller. ``request_id`` and ``client_ip`` say which request and from
    where, for the audit trail (None outside a request)."""

    sub: UUID
    name: str
    role: Role
    request_id: str | None = None
    client_ip: str | None = None

    @property
    def sees_every_case(self) -> bool:
        return self.role in (Role.SUPERVISOR, Role.ADMIN)

    @property
    def sees_cases_it_created(self) -> bool:
        """A screener opens cases for others when it screens a referral in; it does not keep them."""
        return self.role is not Role.SCREENER

    def require_may_assign_on_opening(self, worker: UUID | None) -> None:
        """Whoever opens a case may name the worker it goes to, but one that does not keep the
        cases it opens (a screener) may not name itself: that would give it the case for good,
        which only a supervisor's assignment may do."""
        if worker == self.sub and not self.sees_cases_it_created:
            raise Forbidden(
                f"a {self.role} does not keep the cases it opens: name another worker in assign_to, "
                "or leave it out for a supervisor to assign"
            )

    def require(self, *roles: Role) -> None:
        """Raise :class:`Forbidden` unless the principal has one of ``roles``."""
        if self.role not in roles:
            allowed = " or ".join(str(r) for r in roles)
            raise Forbidden(f"this action needs the role {allowed}; you are {self.role}")
