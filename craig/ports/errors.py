"""Infrastructure errors as the core sees them.

Adapters translate driver exceptions (asyncpg, aio-pika, minio, httpx) into these, so no
driver exception ever reaches a use case or a route (ARCHITECTURE rule 3).
"""

from __future__ import annotations


class PortError(Exception):
    """Base class of every infrastructure error raised through a port."""


class Unavailable(PortError):
    """A dependency cannot be reached right now; retrying later may succeed (HTTP 503)."""

    def __init__(self, dependency: str, detail: str) -> None:
        super().__init__(f"{dependency} is unavailable: {detail}")
        self.dependency = dependency
        self.detail = detail


class DatabaseUnavailable(Unavailable):
    def __init__(self, detail: str) -> None:
        super().__init__("database", detail)


class ObjectStoreUnavailable(Unavailable):
    def __init__(self, detail: str) -> None:
        super().__init__("object store", detail)


class BrokerUnavailable(Unavailable):
    def __init__(self, detail: str) -> None:
        super().__init__("broker", detail)


class Defect(PortError):
    """The dependency refused the operation for a reason no retry can fix: a bug, or a schema or
    permission that does not match this code (an undefined table or column, a syntax error).
    Never retryable; the HTTP layer answers 500 with an incident id and logs the cause."""

    def __init__(self, dependency: str, detail: str) -> None:
        super().__init__(f"{dependency} refused the operation: {detail}")
        self.dependency = dependency
        self.detail = detail


class DatabaseDefect(Defect):
    def __init__(self, detail: str) -> None:
        super().__init__("database", detail)


class ObjectStoreDefect(Defect):
    """The object store refused for good: wrong credentials or signature, no such bucket, access
    denied, an argument the SDK rejects. An operator must fix the configuration (HTTP 500)."""

    def __init__(self, detail: str) -> None:
        super().__init__("object store", detail)


class TransientConflict(PortError):
    """A serialization failure or deadlock: the whole transaction may simply be retried."""


class InvalidData(PortError):
    """The store refused a value it cannot hold (a NUL byte in text, a number out of range):
    the request is at fault, and retrying it unchanged cannot succeed (HTTP 422)."""


class ConstraintViolation(PortError):
    """A uniqueness, check or foreign-key constraint refused the write."""

    def __init__(self, constraint: str, detail: str) -> None:
        super().__init__(f"constraint {constraint} refused the write: {detail}")
        self.constraint = constraint
        self.detail = detail


class UndecryptableData(PortError, ValueError):
    """A stored encrypted value cannot be read: tampered with, copied from another row or
    column, written under a key the ring no longer holds, or plaintext where ciphertext belongs.
    Retrying cannot help; an operator must look (HTTP 500, without the value)."""
