"""Domain errors: what went wrong, in the language of the business.

Entrypoints translate these into HTTP problems; adapters never raise them for infrastructure
faults (those are :mod:`craig.ports.errors`).
"""

from __future__ import annotations


class DomainError(Exception):
    """Base class. ``code`` is stable and becomes the problem ``type`` suffix."""

    code = "domain-error"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class NotFound(DomainError):
    code = "not-found"

    def __init__(self, kind: str, ident: object) -> None:
        super().__init__(f"{kind} {ident} was not found")
        self.kind = kind
        self.ident = ident


class Forbidden(DomainError):
    code = "forbidden"


class InvalidInput(DomainError):
    """The request is well-formed but violates a business rule (HTTP 422). ``field`` names the
    input at fault when there is one: a dotted path into the request body (``child.age``,
    ``rules[0].when``) or a parameter's name (``per_page``)."""

    code = "invalid-input"

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.field = field


class InvalidCursor(DomainError):
    """A ``cursor`` this API did not hand out: changed, cut, or made for another list (HTTP 400)."""

    code = "invalid-cursor"

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.field = "cursor"


class Conflict(DomainError):
    """The request conflicts with the current state (HTTP 409)."""

    code = "conflict"
