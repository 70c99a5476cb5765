"""Keyset pagination: a page is the rows after a sort key, never an offset.

A page asks for ``limit`` rows strictly after ``after`` (the sort key of the last row of the
previous page) in the list's one total order (its sort columns, then the id). Rows inserted
meanwhile land before or after that key, so a client paging through never sees a row twice and
never misses one that existed when it started. The HTTP layer turns ``next_after`` into an
opaque cursor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import attrs

from craig.domain.constants import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from craig.domain.errors import InvalidInput

T = TypeVar("T")
#: A sort key: the values of a row's sort columns, its id last (datetimes, UUIDs, ints, strings).
SortKey = tuple[Any, ...]


@attrs.frozen
class Keyset:
    limit: int = DEFAULT_PAGE_SIZE
    after: SortKey | None = None

    def __attrs_post_init__(self) -> None:
        if isinstance(self.limit, bool) or not 1 <= self.limit <= MAX_PAGE_SIZE:
            raise InvalidInput(f"limit must lie between 1 and {MAX_PAGE_SIZE}")


@attrs.frozen
class KeysetPage(Generic[T]):
    items: Sequence[T]
    #: The sort key to continue after, or None on the last page.
    next_after: SortKey | None


def keyset_page(rows: Sequence[T], keyset: Keyset, key: Callable[[T], SortKey]) -> KeysetPage[T]:
    """The page from ``rows``, the first ``limit + 1`` rows after ``keyset.after`` in order: one
    more than the page holds tells whether another page follows."""
    items = list(rows[: keyset.limit])
    more = len(rows) > keyset.limit
    return KeysetPage(items=items, next_after=key(items[-1]) if more and items else None)


def after(row_key: SortKey, keyset: Keyset, descending: Sequence[bool]) -> bool:
    """Whether a row with ``row_key`` comes after ``keyset.after`` in an order whose columns are
    descending where ``descending`` says (for adapters that sort in Python)."""
    if keyset.after is None:
        return True
    for value, bound, desc in zip(row_key, keyset.after, descending, strict=True):
        if value == bound:
            continue
        return bool(value < bound) if desc else bool(value > bound)
    return False
