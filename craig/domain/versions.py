"""Optimistic concurrency: a client changes what it read, or is told it is stale.

Every changeable resource has a ``version`` that grows by one per change; its HTTP ``ETag`` is a
strong validator of it. A client sends the ETag it read as ``If-Match``; the use case compares it
with the version it holds locked, so of many concurrent changes made from one read exactly one
wins and the others are told, with the current version, instead of silently overwriting it.
"""

from __future__ import annotations

from typing import Any

import attrs

from craig.domain.errors import DomainError


class StaleVersion(DomainError):
    """The resource changed since the client read it (HTTP 412, with the current ETag)."""

    code = "precondition-failed"

    def __init__(self, kind: str, current_version: int) -> None:
        super().__init__(f"the {kind} changed since you read it; read it again and retry with its new ETag")
        self.current_version = current_version
        self.problem_extra: dict[str, Any] = {"current_version": current_version}


@attrs.frozen
class IfMatch:
    """The versions a client accepts; ``None`` for any (``If-Match: *``)."""

    versions: frozenset[int] | None = None

    def check(self, kind: str, current_version: int) -> None:
        """:class:`StaleVersion` unless ``current_version`` is one of the accepted ones."""
        if self.versions is not None and current_version not in self.versions:
            raise StaleVersion(kind, current_version)


def check_if_match(if_match: IfMatch | None, kind: str, current_version: int) -> None:
    """No precondition (None) always holds."""
    if if_match is not None:
        if_match.check(kind, current_version)
