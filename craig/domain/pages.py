"""Pagination: ``{items, page, per_page, total}``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

import attrs

from craig.domain.constants import DEFAULT_PAGE_SIZE, MAX_PAGE_OFFSET, MAX_PAGE_SIZE
from craig.domain.errors import InvalidInput

T = TypeVar("T")


@attrs.frozen
class PageRequest:
    page: int = 1
    per_page: int = DEFAULT_PAGE_SIZE

    def __attrs_post_init__(self) -> None:
        if self.page < 1:
            raise InvalidInput("page counts from 1", field="page")
        if not 1 <= self.per_page <= MAX_PAGE_SIZE:
            raise InvalidInput(f"per_page must lie between 1 and {MAX_PAGE_SIZE}", field="per_page")
        if self.offset > MAX_PAGE_OFFSET:
            raise InvalidInput(f"page lies beyond any list (page x per_page at most {MAX_PAGE_OFFSET})", field="page")

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page


@attrs.frozen
class Page(Generic[T]):
    items: Sequence[T]
    page: int
    per_page: int
    total: int

    @classmethod
    def empty(cls, request: PageRequest) -> Page[T]:
        return cls(items=(), page=request.page, per_page=request.per_page, total=0)
