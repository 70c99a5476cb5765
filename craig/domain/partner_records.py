"""Records read from a partner's paginated API, parsed into typed items.

A partner page is ``{items, page, per_page, total}``; each record is
``{id, type, updated_at?, data?}``. Parsing is strict: a body of any other shape raises
``ValueError``, which the caller reports as ``upstream_deserialize``, never as "no data".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import attrs

from craig.domain.pages import Page, PageRequest

T = TypeVar("T")


@attrs.frozen(kw_only=True)
class PartnerRecord:
    id: str
    type: str
    updated_at: datetime | None = None
    data: Mapping[str, Any] = attrs.field(factory=dict)


def _int(raw: Mapping[str, Any], key: str, minimum: int) -> int:
    value = raw.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"`{key}` must be an integer >= {minimum}")
    return value


def parse_record(raw: Any) -> PartnerRecord:
    if not isinstance(raw, Mapping):
        raise ValueError("a record must be a JSON object")
    ident = raw.get("id")
    if isinstance(ident, bool) or not isinstance(ident, str | int) or ident == "":
        raise ValueError("record `id` must be a non-empty string or an integer")
    kind = raw.get("type")
    if not isinstance(kind, str) or not kind:
        raise ValueError("record `type` must be a non-empty string")
    updated = raw.get("updated_at")
    if updated is not None and not isinstance(updated, str):
        raise ValueError("record `updated_at` must be an ISO 8601 string")
    data = raw.get("data", {})
    if not isinstance(data, Mapping):
        raise ValueError("record `data` must be a JSON object")
    return PartnerRecord(
        id=str(ident),
        type=kind,
        updated_at=datetime.fromisoformat(updated) if updated else None,
        data=dict(data),
    )


def parse_page(raw: Any, parse_item: Callable[[Any], T], asked: PageRequest | None = None) -> Page[T]:
    """``{items, page, per_page, total}`` with every item parsed; ``ValueError`` otherwise,
    and for a page other than the one ``asked`` for (another page number, or more items than
    asked for: a partner's page is passed on to case workers as the page they asked for)."""
    if not isinstance(raw, Mapping):
        raise ValueError("a page must be a JSON object")
    items = raw.get("items")
    if not isinstance(items, list):
        raise ValueError("`items` must be a JSON array")
    if asked is not None and len(items) > asked.per_page:
        raise ValueError(f"the page holds {len(items)} items, more than the {asked.per_page} asked for")
    parsed = []
    for index, item in enumerate(items):
        try:
            parsed.append(parse_item(item))
        except ValueError as error:
            raise ValueError(f"items[{index}]: {error}") from None
    page = Page(
        items=parsed,
        page=_int(raw, "page", 1),
        per_page=_int(raw, "per_page", 1),
        total=_int(raw, "total", 0),
    )
    if asked is not None and (page.page != asked.page or page.per_page > asked.per_page):
        raise ValueError(
            f"the partner answered page {page.page} of {page.per_page} for page {asked.page} of {asked.per_page}"
        )
    if page.total > _LARGEST_TOTAL:
        raise ValueError(f"`total` must be at most {_LARGEST_TOTAL}")
    return page


#: The largest integer every JSON reader holds exactly (a double's 53 bits).
_LARGEST_TOTAL = 2**53 - 1
