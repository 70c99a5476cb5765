"""Finding cases: the filters of ``GET /v1/cases`` and their sort orders, as pure values.

Filters combine with AND, after the visibility rules. ``family_name`` is compared after
:func:`craig.domain.cases.normalise_family_name`, through a keyed blind index (the adapters'
business), never by decrypting names.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any
from uuid import UUID

import attrs

from craig.domain.cases import Case, CaseStatus, normalise_family_name
from craig.domain.errors import InvalidInput
from craig.domain.instants import compared_instant


class CaseSort(enum.StrEnum):
    OPENED_AT = "opened_at"
    OPENED_AT_DESC = "-opened_at"
    UPDATED_AT = "updated_at"
    UPDATED_AT_DESC = "-updated_at"

    @property
    def column(self) -> str:
        return self.value.removeprefix("-")

    @property
    def descending(self) -> bool:
        return self.value.startswith("-")


#: The purpose a family name's blind index is made for (it keys the digest).
FAMILY_NAME_INDEX = "cases.family_name"


@attrs.frozen(kw_only=True)
class CaseQuery:
    status: CaseStatus | None = None
    assigned_to: UUID | None = None
    #: Already normalised (:func:`normalise_family_name`).
    family_name: str | None = None
    opened_from: datetime | None = None
    opened_to: datetime | None = None
    referral_id: UUID | None = None
    sort: CaseSort = CaseSort.OPENED_AT_DESC

    @classmethod
    def parse(
        cls,
        *,
        status: str | None = None,
        assigned_to: UUID | None = None,
        family_name: str | None = None,
        opened_from: datetime | None = None,
        opened_to: datetime | None = None,
        referral_id: UUID | None = None,
        sort: str | None = None,
    ) -> CaseQuery:
        """:class:`InvalidInput` for a value outside its choices."""
        try:
            parsed_status = CaseStatus(status) if status is not None else None
        except ValueError:
            raise InvalidInput(f"status must be open or closed; got {status!r}") from None
        try:
            parsed_sort = CaseSort(sort) if sort is not None else CaseSort.OPENED_AT_DESC
        except ValueError:
            choices = ", ".join(s.value for s in CaseSort)
            raise InvalidInput(f"sort must be one of {choices}; got {sort!r}") from None
        for field, moment in (("opened_from", opened_from), ("opened_to", opened_to)):
            if moment is not None and moment.utcoffset() is None:
                # A time with no zone is no instant: compared as the server's local time it
                # would select by whatever zone the process runs in.
                raise InvalidInput(f"{field} needs a time zone (e.g. 2026-01-31T14:00:00Z)", field=field)
        name = normalise_family_name(family_name) if family_name is not None else None
        if name == "":
            # An empty filter must not widen the list to every case the caller may see.
            raise InvalidInput(f"family_name must name a family (leave it out to filter on none); got {family_name!r}")
        return cls(
            status=parsed_status,
            assigned_to=assigned_to,
            family_name=name,
            opened_from=compared_instant(opened_from),
            opened_to=compared_instant(opened_to),
            referral_id=referral_id,
            sort=parsed_sort,
        )

    def matches(self, case: Case) -> bool:
        """Every filter but ``family_name`` (compared through its index by the adapters)."""
        return (
            (self.status is None or case.status is self.status)
            and (self.assigned_to is None or self.assigned_to in case.assigned_workers)
            and (self.opened_from is None or case.opened_at >= self.opened_from)
            and (self.opened_to is None or case.opened_at <= self.opened_to)
            and (self.referral_id is None or case.referral_id == self.referral_id)
        )

    def sort_key(self, case: Case) -> tuple[Any, ...]:
        return (getattr(case, self.sort.column), case.id)
